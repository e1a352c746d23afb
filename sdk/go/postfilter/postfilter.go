// Package postfilter exports the PostFilter entry point (wasmkube_postfilter).
package postfilter

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Rejected is a node that Filter rejected, with the code it was rejected with.
type Rejected struct {
	Node sdk.Node // only Name is available in PostFilter
	Code sdk.Code
}

// Func runs when no node passed Filter. Return the name of a node to nominate, or "" and a
// status (Unschedulable when nothing can be done).
type Func func(pod sdk.Pod, rejected []Rejected) (nominated string, st sdk.Status)

var fn Func

// Register sets the plugin's PostFilter function. Call it from init().
func Register(f Func) { fn = f }

func run(count int32) int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("postfilter: no function registered (call postfilter.Register in init)")
		return int32(sdk.CodeError)
	}
	rejected := make([]Rejected, count)
	for i := range rejected {
		rejected[i] = Rejected{Node: sdk.NodeAt(int32(i)), Code: sdk.Code(abi.NodeFilterCode(int32(i)))}
	}
	name, st := fn(sdk.Pod{}, rejected)
	if !st.IsSuccess() {
		sdk.SetReason(st.Reason)
		return int32(st.Code)
	}
	if name == "" {
		return int32(sdk.CodeUnschedulable)
	}
	abi.Nominate(unsafe.Pointer(unsafe.StringData(name)), int32(len(name)))
	return 0
}
