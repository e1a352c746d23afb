// Package score exports the Score entry point (wasmkube_score) and, when RegisterNormalize
// is used, NormalizeScore (wasmkube_normalizescore) through package normalize.
package score

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Func scores node for pod. Without NormalizeScore the score must be in [0, 100].
// A non-success status fails the call (the plugin's failurePolicy applies).
type Func func(pod sdk.Pod, node sdk.Node) (int64, sdk.Status)

var fn Func

// Register sets the plugin's Score function. Call it from init().
func Register(f Func) { fn = f }

func run(count int32) int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("score: no function registered (call score.Register in init)")
		return int32(sdk.CodeError)
	}
	var pod sdk.Pod
	lo := int32(0)
	for i := int32(0); i < count; i++ {
		s, st := fn(pod, sdk.NodeAt(i))
		if !st.IsSuccess() {
			sdk.SetReason(st.Reason)
			return int32(sdk.CodeError)
		}
		window[i-lo] = s
		if i-lo == scoreWindow-1 || i == count-1 {
			abi.NodeScores(lo, i-lo+1, unsafe.Pointer(&window[0]))
			lo = i + 1
		}
	}
	return 0
}

// scoreWindow is how many scores one node_scores call hands over: a batch of 5000 nodes
// costs 20 crossings instead of 5000.
const scoreWindow = 256

// window collects the scores of the nodes since the last node_scores call (a global: a
// guest instance is single-threaded, and a local passed to the host would be moved to
// the heap).
var window [scoreWindow]int64
