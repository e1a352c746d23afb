package scheduler_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// flakyReserve fails Reserve with an internal error the first `fail` times.
type flakyReserve struct {
	calls atomic.Int32
	fail  int32
}

func (p *flakyReserve) Name() string { return "flaky" }
func (p *flakyReserve) Reserve(context.Context, *framework.CycleState, *v1.Pod, string) *framework.Status {
	if p.calls.Add(1) <= p.fail {
		return framework.NewStatus(framework.Error, "backing store unavailable")
	}
	return nil
}
func (p *flakyReserve) Unreserve(context.Context, *framework.CycleState, *v1.Pod, string) {}

func TestErrorsBackOffAndRetry(t *testing.T) {
	c := newCluster(t, 2)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flaky.wasm"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := []byte(`
scheduler:
  wasmPlugins: [{name: flaky, path: flaky.wasm}]
  profiles:
  - schedulerName: default-scheduler
    plugins: {reserve: {enabled: [{name: flaky}]}}
`)
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	pl := &flakyReserve{fail: 2}
	loader := func(context.Context, config.WasmPlugin, string) (framework.PluginFactory, error) {
		return func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) { return pl, nil }, nil
	}
	c.startScheduler(scheduler.Options{ConfigFile: file, WasmLoader: loader})
	c.createPod("retry", requests("100m", "64Mi"))
	p := c.waitPod("retry", "bound after two failed attempts", bound)
	if n := pl.calls.Load(); n != 3 {
		t.Fatalf("Reserve called %d times, want 3 (two errors, then success)", n)
	}
	c.waitEvent("retry", "FailedScheduling", "backing store unavailable")
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodScheduled && cond.Status != v1.ConditionTrue {
			t.Fatalf("bound pod has PodScheduled=%s", cond.Status)
		}
	}
}
