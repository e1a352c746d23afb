package wasmtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// endpoint is a case's fake pod: it answers every port on loopback by path, and counts
// the requests per path.
type endpoint struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func startEndpoint(paths map[string]Response) (*endpoint, error) {
	e := &endpoint{calls: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake pod endpoint: %w", err)
	}
	e.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		n := e.calls[r.URL.Path]
		e.calls[r.URL.Path]++
		e.mu.Unlock()
		resp, ok := paths[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if len(resp.Sequence) > 0 {
			resp = resp.Sequence[min(n, len(resp.Sequence)-1)]
		}
		if resp.DelayMs > 0 {
			select {
			case <-time.After(time.Duration(resp.DelayMs) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		status := resp.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(resp.Body))
	}))
	e.srv.Listener = ln
	e.srv.Start()
	return e, nil
}

// runHook runs one probe or preStop call of the case against its fake pod endpoint.
func (p *Plugin) runHook(ctx context.Context, c *Case, pool *wasmhost.Pool) []string {
	h := c.Hook
	k := nodewasm.Probe
	if h.Kind == "prestop" {
		k = nodewasm.PreStop
	}
	if !p.mod.Kinds().Has(k) {
		return []string{fmt.Sprintf("the case is a %s call, and the module does not export %s", h.Kind, k.Export)}
	}
	e, err := startEndpoint(h.Endpoint)
	if err != nil {
		return []string{err.Error()}
	}
	defer e.srv.Close()
	container := h.Container
	if container == "" && len(c.Pod.Spec.Containers) > 0 {
		container = c.Pod.Spec.Containers[0].Name
	}
	timeout := time.Duration(h.TimeoutSeconds) * time.Second
	if timeout == 0 {
		timeout = time.Second
		if k == nodewasm.PreStop {
			timeout = 30 * time.Second
		}
	}
	podIP := c.Pod.Status.PodIP
	if podIP == "" {
		podIP = "10.88.0.10" // only named to the guest: every connection goes to the endpoint
	}
	call := &nodewasm.Call{Kind: k, Pod: c.Pod, Container: container, PodIP: podIP, Timeout: timeout}
	if k == nodewasm.Probe {
		call.ProbeKind = h.Kind
	}
	addr := e.srv.Listener.Addr().String()
	if h.Down {
		// A port nothing listens on: take one, and let it go.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return []string{err.Error()}
		}
		addr = ln.Addr().String()
		_ = ln.Close()
	}
	call.RedirectTo(addr)
	err = call.Do(ctx, pool)
	var ce *wasmhost.CallError
	if err != nil && !(errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError) {
		if ce != nil {
			return []string{fmt.Sprintf("plugin failure in %s: %s: %v", ce.Kind, ce.Reason, ce.Err)}
		}
		return []string{"plugin failure: " + err.Error()}
	}
	success, reason := call.Code == wasmhost.CodeSuccess && err == nil, call.Reason
	if err != nil {
		reason = ce.Err.Error()
	}
	var diff []string
	want := c.Expect
	if want.Success != nil && *want.Success != success {
		if success {
			diff = append(diff, "want the probe to fail, it succeeded")
		} else {
			diff = append(diff, fmt.Sprintf("want success, got failure: %q", reason))
		}
	}
	if want.Reason != "" && !strings.Contains(reason, want.Reason) {
		diff = append(diff, fmt.Sprintf("want a reason containing %q, got %q", want.Reason, reason))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	paths := make([]string, 0, len(want.Calls))
	for path := range want.Calls {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	for _, path := range paths {
		if got := e.calls[path]; got < want.Calls[path] {
			diff = append(diff, fmt.Sprintf("want at least %d request(s) to %s, got %d (all: %v)", want.Calls[path], path, got, e.calls))
		}
	}
	return diff
}
