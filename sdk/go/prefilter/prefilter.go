// Package prefilter exports the PreFilter entry point (wasmkube_prefilter).
package prefilter

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Func runs once per scheduling cycle. Return sdk.Skip() to skip this plugin's Filter for
// the pod, a rejection to make the pod unschedulable, or OK. Write per-pod data for Filter
// with sdk.State.Set here.
type Func func(pod sdk.Pod) sdk.Status

var fn Func

// Register sets the plugin's PreFilter function. Call it from init().
func Register(f Func) { fn = f }

// RestrictTo adds a node to the set of nodes Filter evaluates for this pod; when never
// called, all nodes are evaluated. Call it only from the registered Func.
func RestrictTo(nodeName string) {
	abi.PrefilterNode(unsafe.Pointer(unsafe.StringData(nodeName)), int32(len(nodeName)))
}

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("prefilter: no function registered (call prefilter.Register in init)")
		return int32(sdk.CodeError)
	}
	st := fn(sdk.Pod{})
	if !st.IsSuccess() {
		sdk.SetReason(st.Reason)
	}
	return int32(st.Code)
}
