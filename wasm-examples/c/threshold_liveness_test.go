package cexamples_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	"github.com/wasmkube/wasmkube/wasm-examples/go/threshold-liveness/thresholdtest"
)

// The C and Go versions of threshold-liveness give the same verdicts, with the same
// reasons, on the same metrics bodies, through the kubelet's host.
func TestThresholdLivenessSameVerdictsAsGo(t *testing.T) {
	c := wasmbuild.Script(t, "wasm-examples/c/threshold-liveness")
	for _, bad := range []struct{ args, err string }{
		{``, "args are required"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total"}`, "args.max"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total", "max": "10"}`, "args.max"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total", "max": NaN}`, "args.max"},
		{`{"port": 0, "path": "/metrics", "metric": "errors_total", "max": 10}`, "args.port"},
		{`{"port": 8080, "path": "//x/metrics", "metric": "errors_total", "max": 10}`, "args.path"},
		{`{"port": 8080, "path": "/metrics", "metric": "9lives", "max": 10}`, "args.metric"},
		{`{"port": 8080, "path": "/metrics", "metric": "errors_total", "maximum": 10}`, `unknown field "maximum"`},
		{`[8080]`, "not a JSON object"},
	} {
		_, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Path: c}, Args: json.RawMessage(bad.args)})
		if err == nil || !strings.Contains(err.Error(), bad.err) {
			t.Errorf("args %s: %v, want the init's rejection containing %q", bad.args, err, bad.err)
		}
	}
	t.Run("c", func(t *testing.T) { thresholdtest.Check(t, c) })
	t.Run("go", func(t *testing.T) { thresholdtest.Check(t, wasmbuild.Go(t, "wasm-examples/go/threshold-liveness")) })
}
