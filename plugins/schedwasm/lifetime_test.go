package schedwasm

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// Each plugin a factory builds owns its instances and its share of the module: closing one
// (its profile retired) closes its pool and never takes the code from under another plugin
// of the same module, and the factory itself holds nothing that waits for the collector.
func TestClosingAPluginLeavesTheOthersOfItsModule(t *testing.T) {
	ctx := context.Background()
	l := newLoader(t)
	factory, err := l.Load(ctx, config.WasmPlugin{Spec: modulespec.Spec{Name: "drain", Path: wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat")}}, "")
	if err != nil {
		t.Fatal(err)
	}
	first, err := factory(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := factory(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := first.(*plugin), second.(*plugin)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !a.loaded.Closed() || a.pool.Live() != 0 {
		t.Fatalf("closed plugin: closed %v, %d live instances", a.loaded.Closed(), a.pool.Live())
	}
	node := SmokeNode()
	if st := b.Filter(ctx, framework.NewCycleState(), SmokePod(), node); !st.IsSuccess() {
		t.Fatalf("the other plugin of the module after the first closed: %v", st.AsError())
	}
	_ = b.Close()
}
