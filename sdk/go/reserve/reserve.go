// Package reserve exports the Reserve and Unreserve entry points (wasmkube_reserve,
// wasmkube_unreserve). Unreserve runs whenever the pod does not end bound, also when this
// plugin's Reserve refused or never ran: it must undo exactly what Reserve did (keep a
// marker in sdk.State in Reserve, before counting, and look for it in Unreserve).
package reserve

import sdk "github.com/wasmkube/wasmkube/sdk/go"

// Func reserves what the pod needs on node (sdk.ChosenNode()); a rejection sends the pod
// back to the queue as unschedulable.
type Func func(pod sdk.Pod, node sdk.Node) sdk.Status

// UnreserveFunc undoes what Func did for the pod.
type UnreserveFunc func(pod sdk.Pod, node sdk.Node)

var (
	fn   Func
	unfn UnreserveFunc
)

// Register sets the plugin's Reserve and Unreserve functions. Call it from init().
func Register(reserve Func, unreserve UnreserveFunc) { fn, unfn = reserve, unreserve }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("reserve: no function registered (call reserve.Register in init)")
		return int32(sdk.CodeError)
	}
	st := fn(sdk.Pod{}, sdk.ChosenNode())
	if !st.IsSuccess() {
		sdk.SetReason(st.Reason)
	}
	return int32(st.Code)
}

func runUnreserve() int32 {
	sdk.BeginCall()
	if unfn != nil {
		unfn(sdk.Pod{}, sdk.ChosenNode())
	}
	return 0
}
