// Wrong on purpose: Filter remembers the last pod it saw in a global and rejects ssd
// nodes for the pod that follows a "large" pod (conformance: "no state carried from one
// pod's cycle to the next").
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
)

var last, current string

func init() {
	filter.Register(func(pod sdk.Pod, node sdk.Node) sdk.Status {
		if node.Index() == 0 {
			last, current = current, pod.Name()
		}
		if last == "large" && node.Label("disk") == "ssd" {
			return sdk.Reject("after large")
		}
		return sdk.OK()
	})
}

func main() {}
