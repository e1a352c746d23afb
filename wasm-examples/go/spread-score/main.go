// Command spread-score is a wasmkube Score plugin that spreads pods: it prefers the node
// whose requested/allocatable cpu and memory would be lowest after placing the pod
// (upstream's LeastAllocated strategy, cpu and memory weighted equally).
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

func init() { score.Register(Score) }

// Score is the mean of the free cpu and memory fractions after placing pod, in [0, 100].
func Score(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
	res, ok := node.Resources()
	if !ok {
		return 0, sdk.Errorf("node %d: resources unavailable", node.Index())
	}
	req := pod.Requests()
	return Spreading(req.NonZeroMilliCPU, req.NonZeroMemory, &res), sdk.OK()
}

// Spreading is the mean of the free cpu and memory fractions left after adding the pod's
// (non-zero) request, scaled to [0, 100].
func Spreading(podCPU, podMem int64, res *sdk.NodeResources) int64 {
	return (leastAllocated(res.NonZeroRequested.MilliCPU+podCPU, res.Allocatable.MilliCPU) +
		leastAllocated(res.NonZeroRequested.Memory+podMem, res.Allocatable.Memory)) / 2
}

// leastAllocated is 100 for an empty node and 0 for a full (or overfull) one.
func leastAllocated(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * 100 / capacity
}

func main() {}
