// Package normalize exports the NormalizeScore entry point (wasmkube_normalizescore).
package normalize

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// NodeScore is one node's raw score; Func changes Score in place.
type NodeScore struct {
	// Node gives the node's name (only Name is available in NormalizeScore).
	Node  sdk.Node
	Score int64
}

// Func normalizes the raw scores of all feasible nodes into [0, 100], in place.
type Func func(pod sdk.Pod, scores []NodeScore) sdk.Status

var fn Func

// Register sets the plugin's NormalizeScore function. Call it from init().
func Register(f Func) { fn = f }

func run(count int32) int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("normalize: no function registered (call normalize.Register in init)")
		return int32(sdk.CodeError)
	}
	scores := make([]NodeScore, count)
	for i := range scores {
		scores[i] = NodeScore{Node: sdk.NodeAt(int32(i)), Score: abi.ScoreGet(int32(i))}
	}
	if st := fn(sdk.Pod{}, scores); !st.IsSuccess() {
		sdk.SetReason(st.Reason)
		return int32(sdk.CodeError)
	}
	for i, s := range scores {
		abi.NodeScore(int32(i), s.Score)
	}
	return 0
}

// MinMax is a common normalization: scales scores linearly so that the highest becomes
// 100 and the lowest 0 (all equal scores become 100). Use it as Register(normalize.MinMax).
func MinMax(_ sdk.Pod, scores []NodeScore) sdk.Status {
	if len(scores) == 0 {
		return sdk.OK()
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = 100
			continue
		}
		scores[i].Score = (scores[i].Score - lo) * 100 / (hi - lo)
	}
	return sdk.OK()
}
