// Package prebind exports the PreBind entry point (wasmkube_prebind): the last word before
// the binding is written. sdk.Reject sends the pod back to the queue as unschedulable
// ("not now"); sdk.Errorf is a failure (the plugin's failurePolicy applies).
package prebind

import sdk "github.com/wasmkube/wasmkube/sdk/go"

// Func decides for pod on node (sdk.ChosenNode()).
type Func func(pod sdk.Pod, node sdk.Node) sdk.Status

var fn Func

// Register sets the plugin's PreBind function. Call it from init().
func Register(f Func) { fn = f }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("prebind: no function registered (call prebind.Register in init)")
		return int32(sdk.CodeError)
	}
	st := fn(sdk.Pod{}, sdk.ChosenNode())
	if !st.IsSuccess() {
		sdk.SetReason(st.Reason)
	}
	return int32(st.Code)
}
