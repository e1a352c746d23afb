package rustexamples_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// tcp-probe passes while something listens on its port and fails with the reason once
// nothing does, through the kubelet's host (the pod IP is loopback).
func TestTCPProbeThroughTheHost(t *testing.T) {
	path := wasmbuild.Script(t, "wasm-examples/rust/tcp-probe")
	for _, bad := range []string{``, `{"port": 0}`, `{"port": 70000}`, `{"port": "80"}`} {
		if _, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: json.RawMessage(bad)}); err == nil || !strings.Contains(err.Error(), "args.port") {
			t.Errorf("args %q: %v, want the init's rejection naming args.port", bad, err)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d}`, port))
	if r := p.Probe(t, "liveness", time.Second); r.Err != nil || r.Code != 0 {
		t.Errorf("listening: code %d (%q, %v), want success", r.Code, r.Reason, r.Err)
	}
	srv.Close()
	want := fmt.Sprintf("tcp port %d: connection refused", port)
	if r := p.Probe(t, "readiness", time.Second); r.Err != nil || r.Code != 2 || r.Reason != want {
		t.Errorf("closed: code %d (%q, %v), want failure %q", r.Code, r.Reason, r.Err, want)
	}
}
