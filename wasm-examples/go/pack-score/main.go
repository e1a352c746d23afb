// Command pack-score is a wasmkube Score plugin that packs pods onto few nodes: it prefers
// the node whose requested/allocatable cpu and memory would be highest after placing the
// pod (upstream's MostAllocated strategy, cpu and memory weighted equally).
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/score"
	"github.com/wasmkube/wasmkube/sdk/go/sign"
)

// Its score depends on the pod's requests only: it signs them, so pods of equal requests
// are scheduled from one pass (batching).
func init() {
	score.Register(Score)
	sign.Register(sign.Requests)
}

// Score is the mean of the cpu and memory utilisation after placing pod, in [0, 100].
func Score(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
	res := node.ResourcesRef()
	if res == nil {
		return 0, sdk.Errorf("node %d: resources unavailable", node.Index())
	}
	req := pod.Requests()
	return Packing(req.NonZeroMilliCPU, req.NonZeroMemory, res), sdk.OK()
}

// Packing is the mean of the cpu and memory fractions in use after adding the pod's
// (non-zero) request, scaled to [0, 100].
func Packing(podCPU, podMem int64, res *sdk.NodeResources) int64 {
	return (mostAllocated(res.NonZeroRequested.MilliCPU+podCPU, res.Allocatable.MilliCPU) +
		mostAllocated(res.NonZeroRequested.Memory+podMem, res.Allocatable.Memory)) / 2
}

// mostAllocated is 0 for an empty node and 100 for a full one.
func mostAllocated(requested, capacity int64) int64 {
	if capacity <= 0 {
		return 0
	}
	return min(requested, capacity) * 100 / capacity
}

func main() {}
