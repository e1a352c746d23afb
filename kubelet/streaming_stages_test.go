package kubelet_test

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"
)

// execStages records the debug lines of the API server and the kubelets that time an
// exec (the API server's "request" and "stream", the kubelet's "exec request", "exec"
// and "exec done") and splits each of BenchmarkKubectlExec's round trips into stages.
type execStages struct {
	mu   sync.Mutex
	recs []stageRecord
}

type stageRecord struct {
	t     time.Time
	msg   string
	attrs map[string]slog.Value
}

var stageMessages = map[string]bool{"request": true, "stream": true, "exec request": true, "exec": true, "exec done": true}

// handler returns a slog.Handler that records those lines and passes every record on to
// next (which may drop it by level).
func (e *execStages) handler(next slog.Handler) slog.Handler { return &stageHandler{e: e, next: next} }

type stageHandler struct {
	e     *execStages
	next  slog.Handler
	attrs []slog.Attr
}

func (h *stageHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *stageHandler) Handle(ctx context.Context, r slog.Record) error {
	if stageMessages[r.Message] {
		m := map[string]slog.Value{}
		for _, a := range h.attrs {
			m[a.Key] = a.Value
		}
		r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
		h.e.mu.Lock()
		h.e.recs = append(h.e.recs, stageRecord{t: r.Time, msg: r.Message, attrs: m})
		h.e.mu.Unlock()
	}
	if h.next.Enabled(ctx, r.Level) {
		return h.next.Handle(ctx, r)
	}
	return nil
}

func (h *stageHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &stageHandler{e: h.e, next: h.next.WithAttrs(as), attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *stageHandler) WithGroup(name string) slog.Handler {
	return &stageHandler{e: h.e, next: h.next.WithGroup(name), attrs: h.attrs}
}

// stageNames are the stages of one exec, in order; they add up to the round trip.
var stageNames = []string{
	"kubectl-to-get", // kubectl's process start, config, discovery cache, TCP+TLS, until the API server has the GET of the pod
	"get",            // the API server serves the GET
	"get-to-upgrade", // kubectl: the WebSocket dialer, a second TCP+TLS connection, the upgrade request
	"lookup",         // the API server: authz, pod and node from the store
	"hop",            // API server -> kubelet: TCP+TLS, the upgrade request
	"kubelet-setup",  // the kubelet: authn, the pod and its running container found, the WebSocket accepted
	"runtime-load",   // containerd: container and task loaded
	"runtime-create", // the shim creates the exec process (its fifos)
	"runtime-start",  // the shim runs the OCI runtime's exec
	"runtime-run",    // the command runs and exits
	"kubelet-finish", // drain, the exit Status written, the session closed
	"status-back",    // the kubelet's session end until the API server's ends
	"kubectl-exit",   // the API server's session end until kubectl exited
}

// split returns the stages (stageNames order) of the exec of pod on node that started at
// start and took took; ok is false when a line is missing.
func (e *execStages) split(pod, node string, start time.Time, took time.Duration) ([]time.Duration, bool) {
	end := start.Add(took)
	e.mu.Lock()
	defer e.mu.Unlock()
	var get, stream, req, ex, done *stageRecord
	d := func(r *stageRecord, k string) time.Duration { return r.attrs[k].Duration() }
	// Each line is taken by when its stage began (its time less the durations it
	// carries): a session's own lines may come after kubectl exited.
	in := func(t time.Time) bool { return !t.Before(start) && !t.After(end) }
	for i := range e.recs {
		r := &e.recs[i]
		str := func(k string) string {
			if v, ok := r.attrs[k]; ok {
				return v.String()
			}
			return ""
		}
		switch r.msg {
		case "request":
			if str("uri") == "/api/v1/namespaces/default/pods/"+pod && str("verb") == "GET" && in(r.t.Add(-d(r, "latency"))) {
				get = r
			}
		case "stream":
			if str("pod") == "default/"+pod && in(r.t.Add(-d(r, "proxied")-d(r, "lookup"))) {
				stream = r
			}
		case "exec request":
			if str("node") == node && in(r.t.Add(-d(r, "resolve"))) {
				req = r
			}
		case "exec done":
			if str("node") == node && in(r.t.Add(-d(r, "took"))) {
				done = r
			}
		case "exec":
			if str("node") == node && in(r.t.Add(-(d(r, "load") + d(r, "create") + d(r, "start") + d(r, "run") + d(r, "drain")))) {
				ex = r
			}
		}
	}
	if get == nil || stream == nil || req == nil || ex == nil || done == nil {
		return nil, false
	}
	getStart := get.t.Add(-d(get, "latency"))
	streamStart := stream.t.Add(-d(stream, "proxied") - d(stream, "lookup"))
	kubeletStart := req.t.Add(-d(req, "resolve"))
	runtimeStart := ex.t.Add(-(d(ex, "load") + d(ex, "create") + d(ex, "start") + d(ex, "run") + d(ex, "drain")))
	return []time.Duration{
		getStart.Sub(start),
		d(get, "latency"),
		streamStart.Sub(get.t),
		d(stream, "lookup"),
		kubeletStart.Sub(streamStart.Add(d(stream, "lookup"))),
		runtimeStart.Sub(kubeletStart),
		d(ex, "load"), d(ex, "create"), d(ex, "start"), d(ex, "run"),
		done.t.Sub(ex.t.Add(-d(ex, "drain"))),
		stream.t.Sub(done.t),
		end.Sub(stream.t),
	}, true
}

// medians returns each stage's median over rows.
func medians(rows [][]time.Duration) []time.Duration {
	if len(rows) == 0 {
		return nil
	}
	out := make([]time.Duration, len(stageNames))
	for i := range stageNames {
		col := make([]time.Duration, len(rows))
		for j, r := range rows {
			col[j] = r[i]
		}
		sort.Slice(col, func(a, b int) bool { return col[a] < col[b] })
		out[i] = col[len(col)/2]
	}
	return out
}
