//go:build !wasip1

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/wasm-examples/go/threshold-liveness/thresholdtest"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args, err string
	}{
		{`{"port": 8080, ` + thresholdtest.Args + `}`, ""},
		{`{"port": 9090, "path": "/metrics", "metric": "queue:depth", "max": 2.5e3}`, ""},
		{``, "args are required"},
		{`{"port": -1, "path": "/metrics", "metric": "errors_total", "max": 10}`, "args.port"},
		{`{"port": 8080, "path": "metrics", "metric": "errors_total", "max": 10}`, "args.path"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors total", "max": 10}`, "args.metric"},
		{`{"port": 8080, "path": "/metrics", "metric": "9lives", "max": 10}`, "args.metric"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total"}`, "args.max"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total", "max": "10"}`, "args.max"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total", "maximum": 10}`, `unknown field "maximum"`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.args))
		if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Parse(%s) = %v, want an error containing %q", tt.args, err, tt.err)
		}
	}
}

func TestDecide(t *testing.T) {
	cfg, err := Parse([]byte(`{"port": 8080, ` + thresholdtest.Args + `}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range thresholdtest.Cases {
		got := cfg.Decide(c.Status, []byte(c.Body))
		if int32(got.Code) != c.Code || got.Reason != c.Reason {
			t.Errorf("HTTP %d %q: %d %q, want %d %q", c.Status, c.Body, got.Code, got.Reason, c.Code, c.Reason)
		}
	}
	if got := cfg.Decide(200, []byte("errors_total 1e400\n")); got.Code != sdk.CodeFailure {
		t.Errorf("beyond float64: %+v, want a failure", got)
	}
}

func TestModuleThroughTheHost(t *testing.T) {
	path := wasmbuild.Go(t, "wasm-examples/go/threshold-liveness")
	if _, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: path}, Args: json.RawMessage(`{"port": 8080, "path": "/metrics", "metric": "errors_total"}`)}); err == nil || !strings.Contains(err.Error(), "args.max") {
		t.Errorf("args without max: %v, want the init's rejection naming args.max", err)
	}
	thresholdtest.Check(t, path)
}
