package rustsdk_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// The PreStop runner and the kubelet wrappers through the kubelet's host: http_post with a
// body, response_header, sleep_ms, and the pod's annotation.
func TestPreStopRunner(t *testing.T) {
	// The handler runs on the server's goroutines: what it sees and answers is behind mu.
	var mu sync.Mutex
	status, body := 200, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		body = r.Method + " " + r.URL.Path + " " + string(b)
		w.Header().Set("X-Drain", "busy")
		w.WriteHeader(status)
	}))
	defer srv.Close()
	p := nodewasmtest.Load(t, wasmbuild.Script(t, "sdk/rust/testdata/prestop"), "")
	p.Pod = p.Pod.DeepCopy()
	p.Pod.Annotations = map[string]string{"port": fmt.Sprint(nodewasmtest.Port(t, srv))}
	if r := p.PreStop(t, time.Second); r.Err != nil || r.Code != 0 {
		t.Errorf("200: code %d %q (%v), want done", r.Code, r.Reason, r.Err)
	}
	mu.Lock()
	if want := "POST /drain app@" + nodewasmtest.PodIP; body != want {
		t.Errorf("the server got %q, want %q", body, want)
	}
	status = 503
	mu.Unlock()
	if r := p.PreStop(t, time.Second); r.Code != 1 || !strings.Contains(r.Reason+fmt.Sprint(r.Err), "drain: 503 busy") {
		t.Errorf("503: code %d %q (%v), want the error with the X-Drain header", r.Code, r.Reason, r.Err)
	}
}
