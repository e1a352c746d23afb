// Package prescore exports the PreScore entry point (wasmkube_prescore).
package prescore

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

// Func runs once per cycle with all feasible nodes. Return sdk.Skip() to skip this plugin's
// Score for the pod. Write per-pod data for Score with sdk.State.Set here.
type Func func(pod sdk.Pod, nodes []sdk.Node) sdk.Status

var fn Func

// Register sets the plugin's PreScore function. Call it from init().
func Register(f Func) { fn = f }

func run(count int32) int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("prescore: no function registered (call prescore.Register in init)")
		return int32(sdk.CodeError)
	}
	nodes := make([]sdk.Node, count)
	for i := range nodes {
		nodes[i] = sdk.NodeAt(int32(i))
	}
	st := fn(sdk.Pod{}, nodes)
	if !st.IsSuccess() {
		sdk.SetReason(st.Reason)
	}
	return int32(st.Code)
}
