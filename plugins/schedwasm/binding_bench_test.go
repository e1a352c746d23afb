package schedwasm

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// BenchmarkBindingPoints measures what each binding-cycle point and a queueing hint cost
// per pod when a wasm plugin serves it: plugins/testdata/binding.wat (a state write and a
// counter add in Reserve, a counter in PreBind and PostBind, a pod name read in each),
// through the profile's runtime as the scheduler calls it. One op is one call.
func BenchmarkBindingPoints(b *testing.B) {
	ctx := context.Background()
	spec := config.WasmPlugin{}
	spec.Name = "binding"
	f, _ := bindingProfile(b, newLoader(b), spec)
	p := pod("ok", "1", "1Gi")
	n := node("n2", "", "4", "8Gi").Node()
	rej := map[string]struct{}{"binding": {}}
	ev := framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}
	b.Run("reserve+unreserve", func(b *testing.B) {
		for range b.N {
			st := framework.NewCycleState()
			f.RunReservePluginsReserve(ctx, st, p, "n1")
			f.RunReservePluginsUnreserve(ctx, st, p, "n1")
		}
	})
	b.Run("permit", func(b *testing.B) {
		for range b.N {
			f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
		}
	})
	b.Run("prebind", func(b *testing.B) {
		for range b.N {
			f.RunPreBindPlugins(ctx, framework.NewCycleState(), p, "n1")
		}
	})
	b.Run("postbind", func(b *testing.B) {
		for range b.N {
			f.RunPostBindPlugins(ctx, framework.NewCycleState(), p, "n1")
		}
	})
	b.Run("queueinghint", func(b *testing.B) {
		for range b.N {
			f.QueueingHint(ctx, p, rej, ev, nil, n)
		}
	})
}
