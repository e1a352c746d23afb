package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	constants "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"
)

// WebSocket v5.channel.k8s.io, served by the kubelet itself: kubectl 1.30+'s default
// protocol for exec and attach. Upstream's kubelet speaks only SPDY (and the old WebSocket
// v1-v4) and its API server translates v5 to SPDY; that translation costs a second
// connection and, per session, one SPDY round trip for each stream (error, stdin, stdout,
// stderr, resize) before the command can start. Our API server passes a v5 request through
// to the kubelet unchanged (core/apiserver/streaming.go), so the session is one WebSocket
// from kubectl to here. The channel layout and status messages are upstream's
// (k8s.io/apiserver/pkg/util/proxy/websocket.go, which this follows), on upstream's
// WebSocket library, k8s.io/streaming's wsstream, which also handles v5's half-close of
// stdin (channel 255).

const wsWriteErrorDeadline = 10 * time.Second

// isWebSocketV5 says whether r asks for a WebSocket of the v5 remote command protocol.
func isWebSocketV5(r *http.Request) bool {
	return wsstream.IsWebSocketRequestWithStreamCloseProtocol(r)
}

func wsChannel(real bool, t wsstream.ChannelType) wsstream.ChannelType {
	if real {
		return t
	}
	return wsstream.IgnoreChannel
}

// serveWebSocketV5 upgrades r, runs fn with the streams opts names and writes the outcome
// as a Status on the error channel (a non-zero exit as NonZeroExitCode with the ExitCode
// cause, which kubectl turns into its own exit code).
func serveWebSocketV5(w http.ResponseWriter, r *http.Request, opts *remotecommand.Options,
	fn func(ctx context.Context, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error) {
	channels := make([]wsstream.ChannelType, 5)
	channels[constants.StreamStdIn] = wsChannel(opts.Stdin, wsstream.ReadChannel)
	channels[constants.StreamStdOut] = wsChannel(opts.Stdout, wsstream.WriteChannel)
	channels[constants.StreamStdErr] = wsChannel(opts.Stderr && !opts.TTY, wsstream.WriteChannel)
	channels[constants.StreamErr] = wsstream.WriteChannel
	channels[constants.StreamResize] = wsstream.ReadChannel
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		constants.StreamProtocolV5Name: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(streamIdleTimeout)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return // the library answered the client
	}
	defer conn.Close()
	// An empty message on the lowest writable channel tells the client the session is up.
	switch {
	case opts.Stdout:
		_, err = streams[constants.StreamStdOut].Write([]byte{})
	case opts.Stderr && !opts.TTY:
		_, err = streams[constants.StreamStdErr].Write([]byte{})
	default:
		_, err = streams[constants.StreamErr].Write([]byte{})
	}
	if err != nil {
		return
	}
	ctx := r.Context()
	var resize chan remotecommand.TerminalSize
	if opts.TTY {
		resize = make(chan remotecommand.TerminalSize)
		go func() {
			defer close(resize)
			dec := json.NewDecoder(streams[constants.StreamResize])
			for {
				var sz remotecommand.TerminalSize
				if dec.Decode(&sz) != nil {
					return
				}
				select {
				case resize <- sz:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	var in io.Reader
	var out, errw io.WriteCloser
	if opts.Stdin {
		in = streams[constants.StreamStdIn]
	}
	if opts.Stdout {
		out = streams[constants.StreamStdOut]
	}
	if opts.Stderr && !opts.TTY {
		errw = streams[constants.StreamStdErr]
	}
	st := metav1.Status{Status: metav1.StatusSuccess}
	if err := fn(ctx, in, out, errw, opts.TTY, resize); err != nil {
		if exitErr, ok := err.(utilexec.ExitError); ok && exitErr.Exited() {
			st = metav1.Status{
				Status: metav1.StatusFailure, Reason: constants.NonZeroExitCodeReason,
				Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
					{Type: constants.ExitCodeCauseType, Message: fmt.Sprintf("%d", exitErr.ExitStatus())}}},
				Message: fmt.Sprintf("command terminated with non-zero exit code: %v", exitErr),
			}
		} else {
			st = metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError,
				Message: fmt.Sprintf("error executing command in container: %v", err)}
		}
	}
	bs, err := json.Marshal(st)
	if err != nil {
		return
	}
	conn.SetWriteDeadline(wsWriteErrorDeadline)
	_, _ = streams[constants.StreamErr].Write(bs)
}
