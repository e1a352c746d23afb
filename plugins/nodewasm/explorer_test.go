package nodewasm_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// TestHookRunsAndSwapsAreRecorded: with a recorder, each wasm probe run is a HookRun
// record (pod, container, hook, plugin, outcome, message, duration) and an apply that
// adds a plugin is a swap; the built-in handler's runs are not recorded.
func TestHookRunsAndSwapsAreRecorded(t *testing.T) {
	port := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "warming") }))
	hk := newHooks(t)
	ring := explorer.NewRing(10)
	rec := explorer.NewRecorder(ring, explorerv1.ComponentKubelet, "node-1")
	hk.SetDecisionRecorder(rec)
	if err := hk.Apply(context.Background(), &config.Config{}, ""); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{HookPlugins: []config.HookPlugin{{Spec: modulespec.Spec{Name: "health", Path: wat(t, "get.wat"), FailurePolicy: config.Fail}, Args: []byte(fmt.Sprint(port))}}}
	if err := hk.Apply(context.Background(), cfg, ""); err != nil {
		t.Fatal(err)
	}
	fb := &fallback{}
	pr, _ := hk.Runners(fb, fb, nil)
	pod := testPod(map[string]string{nodewasm.Annotation(config.KindReadiness, "web"): "health"}, nil)
	pod.Spec.NodeName = "node-1"
	if r, _, _ := pr.Probe(context.Background(), target(pod, probe.Readiness), nil); r != probe.Failure {
		t.Fatalf("probe: %s, want Failure (body not ok)", r)
	}
	if _, _, _ = pr.Probe(context.Background(), target(pod, probe.Liveness), nil); fb.probes.Load() != 1 {
		t.Fatal("the liveness probe has no plugin: the built-in handler runs")
	}
	rec.Close()
	recs, _ := ring.All()
	var swap, run *explorerv1.Record
	for i := range recs {
		switch recs[i].Type {
		case explorerv1.TypeSwap:
			swap = &recs[i]
		case explorerv1.TypeHookRun:
			if run != nil {
				t.Fatalf("two hook runs recorded, want only the wasm probe's: %+v", recs)
			}
			run = &recs[i]
		}
	}
	if swap == nil || swap.Swap.Policy != "health" || swap.Swap.Result != explorerv1.SwapApplied {
		t.Fatalf("swap record: %+v", swap)
	}
	h := run.HookRun
	if run.Component != explorerv1.ComponentKubelet || h.Pod.Name != "p" || h.Container != "web" || h.Hook != "readiness" || h.Handler != "health" ||
		h.Outcome != "Failure" || h.Message != "wasm plugin health: body not ok" || h.DurationNanos <= 0 || h.Node != "node-1" || h.Wasm == nil {
		t.Fatalf("hook run: %+v", h)
	}
}
