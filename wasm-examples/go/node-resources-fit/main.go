// Command node-resources-fit is the NodeResourcesFit Filter ported to a wasmkube plugin:
// it rejects nodes whose allocatable resources cannot hold the pod's requests on top of
// what the node's pods already request, with upstream's reasons ("Too many pods",
// "Insufficient cpu", ...). It exists to compare wasm and native side by side.
package main

import (
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
	"github.com/wasmkube/wasmkube/sdk/go/sign"
)

// Args are the plugin's args (the Filter half of NodeResourcesFit's).
type Args struct {
	// IgnoredResources are extended resources Filter does not check.
	IgnoredResources []string `json:"ignoredResources,omitempty"`
}

var ignored = map[string]bool{}

func init() {
	sdk.OnInit(func() error {
		var a Args
		if err := sdk.DecodeArgs(&a); err != nil {
			return err
		}
		for _, r := range a.IgnoredResources {
			ignored[r] = true
		}
		return nil
	})
	filter.Register(Filter)
	// The verdict depends on the pod's requests only: pods of equal requests are
	// scheduled from one pass (batching).
	sign.Register(sign.Requests)
}

// Filter checks pod count, cpu, memory, ephemeral storage and extended resources.
func Filter(pod sdk.Pod, node sdk.Node) sdk.Status {
	res := node.ResourcesRef()
	if res == nil {
		return sdk.Errorf("node %d: resources unavailable", node.Index())
	}
	req := pod.Requests()
	if Fits(req, res) && len(pod.ScalarNames()) == 0 {
		return sdk.OK() // the common case, without building a list of reasons
	}
	reasons := Insufficient(sdk.Resources{MilliCPU: req.MilliCPU, Memory: req.Memory, EphemeralStorage: req.EphemeralStorage}, res)
	for _, name := range pod.ScalarNames() {
		q := pod.ScalarRequest(name)
		if q == 0 || ignored[name] {
			continue
		}
		if q > node.Scalar(name, false)-node.Scalar(name, true) {
			reasons = append(reasons, "Insufficient "+name)
		}
	}
	if len(reasons) == 0 {
		return sdk.OK()
	}
	// Several reasons travel as one, separated by newlines (docs/abi.md section 4.4).
	return sdk.Reject(strings.Join(reasons, "\n"))
}

// Fits reports whether Insufficient has nothing to say: small enough to be inlined into
// Filter, so that a node that fits costs no further call (a call in Go's wasm code costs
// about as much as these comparisons).
func Fits(req *sdk.PodRequests, node *sdk.NodeResources) bool {
	return node.Requested.Pods+1 <= node.Allocatable.Pods &&
		(req.MilliCPU <= 0 || req.MilliCPU <= node.Allocatable.MilliCPU-node.Requested.MilliCPU) &&
		(req.Memory <= 0 || req.Memory <= node.Allocatable.Memory-node.Requested.Memory) &&
		(req.EphemeralStorage <= 0 || req.EphemeralStorage <= node.Allocatable.EphemeralStorage-node.Requested.EphemeralStorage)
}

// Insufficient lists why a request does not fit the node's free cpu, memory, ephemeral
// storage and pod slots.
func Insufficient(req sdk.Resources, node *sdk.NodeResources) []string {
	var reasons []string
	if node.Requested.Pods+1 > node.Allocatable.Pods {
		reasons = append(reasons, "Too many pods")
	}
	if req.MilliCPU > 0 && req.MilliCPU > node.Allocatable.MilliCPU-node.Requested.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > node.Allocatable.Memory-node.Requested.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > node.Allocatable.EphemeralStorage-node.Requested.EphemeralStorage {
		reasons = append(reasons, "Insufficient ephemeral-storage")
	}
	return reasons
}

func main() {}
