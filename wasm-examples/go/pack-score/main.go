// Command pack-score is a wasmkube Score plugin that packs pods onto few nodes: it prefers
// the node whose requested/allocatable cpu and memory would be highest after placing the pod.
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

func init() { score.Register(Score) }

// Score is the mean of the cpu and memory utilisation after placing pod, in [0, 100].
func Score(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
	res, ok := node.Resources()
	if !ok {
		return 0, sdk.Errorf("node %d: resources unavailable", node.Index())
	}
	req := pod.Requests()
	return utilisation(req.NonZeroMilliCPU, req.NonZeroMemory, res), sdk.OK()
}

// utilisation is the mean of the cpu and memory fractions in use after adding the pod,
// scaled to [0, 100]; a resource with no allocatable counts as full.
func utilisation(podCPU, podMem int64, res sdk.NodeResources) int64 {
	return (fraction(res.NonZeroRequested.MilliCPU+podCPU, res.Allocatable.MilliCPU) +
		fraction(res.NonZeroRequested.Memory+podMem, res.Allocatable.Memory)) / 2
}

func fraction(used, capacity int64) int64 {
	if capacity <= 0 || used >= capacity {
		return 100
	}
	return used * 100 / capacity
}

func main() {}
