package asexamples_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// http-probe passes on 2xx and 3xx, fails with the status and the body's start otherwise
// and with the errno once nothing listens, through the kubelet's host (pod IP loopback).
func TestHTTPProbeThroughTheHost(t *testing.T) {
	path := wasmbuild.Script(t, "wasm-examples/assemblyscript/http-probe")
	importsOnlyWasmkube(t, path)
	for _, bad := range []struct{ args, err string }{
		{``, "args: a JSON object"},
		{`[8080]`, "args: a JSON object"},
		{`{"port": 0}`, "args.port"},
		{`{"port": 80.5}`, "args.port"},
		{`{"port": "80"}`, "args.port"},
		{`{"port": 80, "path": "healthz"}`, "args.path"},
		{`{"port": 80, "path": "//evil/healthz"}`, "args.path"},
	} {
		if _, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: json.RawMessage(bad.args)}); err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("args %s: %v, want the init's rejection containing %q", bad.args, err, bad.err)
		}
	}
	var code atomic.Int32
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path)
		w.WriteHeader(int(code.Load()))
		fmt.Fprint(w, " database unreachable\n")
	}))
	port := nodewasmtest.Port(t, srv)
	p := nodewasmtest.Load(t, path, fmt.Sprintf(`{"port": %d, "path": "/healthz"}`, port))
	what := fmt.Sprintf("GET :%d/healthz", port)
	for _, tt := range []struct {
		status int32
		code   int32
		reason string
	}{
		{200, 0, ""},
		{302, 0, ""},
		{503, 2, what + ": status 503: database unreachable"},
		{404, 2, what + ": status 404: database unreachable"},
	} {
		code.Store(tt.status)
		r := p.Probe(t, "liveness", time.Second)
		if r.Err != nil || r.Code != tt.code || r.Reason != tt.reason {
			t.Errorf("status %d: code %d %q (%v), want code %d %q", tt.status, r.Code, r.Reason, r.Err, tt.code, tt.reason)
		}
	}
	if p, _ := got.Load().(string); p != "/healthz" {
		t.Errorf("the server saw path %q, want /healthz", p)
	}
	srv.Close()
	if r := p.Probe(t, "readiness", time.Second); r.Err != nil || r.Code != 2 || r.Reason != what+": connection refused" {
		t.Errorf("closed: code %d %q (%v), want failure %q", r.Code, r.Reason, r.Err, what+": connection refused")
	}
}
