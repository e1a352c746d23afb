package apiserver

import (
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// Connection and request limits (docs/apiserver.md, "HTTP limits"). A client that
// dribbles its headers or its body, or keeps a connection idle, holds a goroutine and a
// socket; these bound how long, without cutting off honest clients on slow links.
// Variables only so that the package's tests can shorten them.
var (
	// readHeaderTimeout: the request line and headers (upstream uses 32 s; 10 s keeps an
	// unauthenticated client, whose headers are all it can send before its 401, under
	// issue 16's 10 s target).
	readHeaderTimeout = 10 * time.Second
	// bodyReadTimeout: the whole request body, from the end of the headers (bodies are
	// at most maxBodyBytes, 3 MiB: 100 KiB/s is enough).
	bodyReadTimeout = 30 * time.Second
	// writeTimeout: the response, from the end of the headers: the request timeout
	// (defaultRequestTimeout) plus time to send a large list.
	writeTimeout = defaultRequestTimeout + 30*time.Second
	// idleTimeout: a keep-alive connection (HTTP/1.1) or an HTTP/2 connection with no
	// stream open is closed after this long, as upstream (90 s).
	idleTimeout = 90 * time.Second
	// maxHeaderBytes, as upstream.
	maxHeaderBytes int = 1 << 20
	// maxDrainBytes bounds what is read of the rest of a body after an HTTP/2 413 (see
	// unreadBodyWriter).
	maxDrainBytes int64 = 64 << 20
)

// httpServer is the API server's net/http server with the limits above. Body and write
// timeouts are set per request (guardRequest), because watches and streams are exempt.
func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
}

// longRunning reports the requests exempt from the body and write timeouts: watches,
// followed logs, and the streams (exec, attach, portforward, proxy), which last as long
// as their client wants.
func longRunning(r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	q := r.URL.Query()
	if w := q.Get("watch"); w == "true" || w == "1" {
		return true
	}
	for _, p := range parts {
		if p == "watch" {
			return true
		}
	}
	switch parts[len(parts)-1] {
	case "exec", "attach", "portforward", "proxy":
		return true
	case "log":
		return q.Get("follow") == "true"
	}
	return false
}

// guardRequest applies the per-request limits: for a request with a body that is not
// long-running, a read deadline for the body and a write deadline for the response;
// and a writer that, when an error is answered before the body was read (401, 403,
// 413, ...), does not wait for the rest of it. The handler calls done when it returns.
func (s *Server) guardRequest(w http.ResponseWriter, r *http.Request) (_ http.ResponseWriter, _ *http.Request, done func()) {
	nothing := func() {}
	if longRunning(r) {
		return w, r, nothing
	}
	rc := http.NewResponseController(w)
	now := time.Now()
	_ = rc.SetWriteDeadline(now.Add(writeTimeout))
	if r.Body == nil || r.Body == http.NoBody {
		// No body to wait for: a read deadline would only cut the connection's
		// background read (and so the request's context) short.
		return w, r, nothing
	}
	_ = rc.SetReadDeadline(now.Add(bodyReadTimeout))
	b := &trackedBody{ReadCloser: r.Body, rc: rc}
	r.Body = b
	u := &unreadBodyWriter{ResponseWriter: w, r: r, body: b, rc: rc}
	return u, r, u.finish
}

// trackedBody records whether the body was read to its end, and lifts the read
// deadline then: once the body is in, net/http's own read for a client that hangs up
// must not time out (it would cancel the request's context).
type trackedBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done atomic.Bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if errors.Is(err, io.EOF) && !b.done.Swap(true) {
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = &handlers.BodyTimeoutError{After: bodyReadTimeout, Err: err}
	}
	return n, err
}

// unreadBodyWriter answers errors without waiting for a body nobody will read. Over
// HTTP/1.1 net/http would otherwise read up to 256 KiB of the rest of the body before
// the next request, at the client's pace (a body dribbled at a byte per 5 s held the
// connection for as long as the client liked, 401 or not): the answer says
// `Connection: close` and the body's read deadline is now. Over HTTP/2 a handler that
// returns while the client is still sending ends the stream with RST_STREAM, and curl
// then drops the response it got: a 413's Status body was lost. So after a 413 over
// HTTP/2 the response is flushed and the handler (finish) reads and discards the rest of
// the body before it returns, bounded by maxDrainBytes and the body's read deadline.
type unreadBodyWriter struct {
	http.ResponseWriter
	r     *http.Request
	body  *trackedBody
	rc    *http.ResponseController
	done  bool
	drain bool
}

func (u *unreadBodyWriter) WriteHeader(code int) {
	if !u.done && code >= 400 && !u.body.done.Load() {
		u.done = true
		switch {
		case u.r.ProtoMajor == 1:
			u.Header().Set("Connection", "close")
			_ = u.rc.SetReadDeadline(time.Now())
		case code == http.StatusRequestEntityTooLarge:
			u.drain = true
		}
	}
	u.ResponseWriter.WriteHeader(code)
}

// finish runs when the handler returns.
func (u *unreadBodyWriter) finish() {
	if u.drain {
		_ = u.rc.Flush()
		_, _ = io.CopyN(io.Discard, u.body.ReadCloser, maxDrainBytes)
	}
}

func (u *unreadBodyWriter) Write(p []byte) (int, error) { return u.ResponseWriter.Write(p) }

func (u *unreadBodyWriter) Flush() {
	if f, ok := u.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (u *unreadBodyWriter) Unwrap() http.ResponseWriter { return u.ResponseWriter }
