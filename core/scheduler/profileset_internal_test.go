package scheduler

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

// closingFilter counts its Close calls, as a wasm plugin frees its instances.
type closingFilter struct{ closed *int }

func (closingFilter) Name() string { return "Closing" }
func (closingFilter) Filter(context.Context, *framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
	return nil
}
func (c closingFilter) Close() error { *c.closed++; return nil }

func closingSet(t *testing.T) (*profileSet, *int) {
	t.Helper()
	closed := new(int)
	reg := plugins.NewInTreeRegistry()
	reg["Closing"] = func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) {
		return closingFilter{closed}, nil
	}
	prof := &config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "Closing"}}}}}
	fwk, err := runtime.New(context.Background(), reg, prof, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &profileSet{frameworks: map[string]*runtime.Framework{"p": fwk}}, closed
}

// A retired profile set closes its plugins once, after its last cycle lets go; a set that
// is retired cannot be acquired again.
func TestRetiredProfilesCloseAfterTheirLastCycle(t *testing.T) {
	ps, closed := closingSet(t)
	if !ps.acquire() || !ps.acquire() {
		t.Fatal("acquire of a set in force failed")
	}
	ps.retire()
	if *closed != 0 {
		t.Fatal("plugins closed under running cycles")
	}
	if ps.acquire() {
		t.Fatal("a retired set was acquired")
	}
	ps.release()
	if *closed != 0 {
		t.Fatal("plugins closed while a cycle still runs")
	}
	ps.release()
	if *closed != 1 {
		t.Fatalf("closed %d times after the last cycle, want once", *closed)
	}
	ps.retire()
	if *closed != 1 {
		t.Fatalf("a second retire closed again (%d)", *closed)
	}

	idle, closedIdle := closingSet(t)
	idle.retire()
	if *closedIdle != 1 {
		t.Fatalf("an idle set's plugins: closed %d times at retire, want once", *closedIdle)
	}
}
