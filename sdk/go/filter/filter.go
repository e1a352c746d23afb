// Package filter exports the Filter entry point (wasmkube_filter). Importing it makes the
// module a Filter plugin; Register sets the function called for each node of a batch.
package filter

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Func decides whether pod fits node. A non-success status rejects the node with its reason.
type Func func(pod sdk.Pod, node sdk.Node) sdk.Status

var fn Func

// Register sets the plugin's Filter function. Call it from init().
func Register(f Func) { fn = f }

func run(count int32) int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("filter: no function registered (call filter.Register in init)")
		return int32(sdk.CodeError)
	}
	var pod sdk.Pod
	for i := int32(0); i < count; i++ {
		st := fn(pod, sdk.NodeAt(i))
		if st.Code == sdk.CodeSuccess {
			continue
		}
		reason := st.Reason
		if reason == "" {
			reason = "rejected"
		}
		abi.NodeStatus(i, int32(st.Code), unsafe.Pointer(unsafe.StringData(reason)), int32(len(reason)))
	}
	return 0
}
