// Wrong on purpose: ssd nodes score 150, outside [0, 100] (conformance: "answers every
// fixture pod without a failure" reports the garbage result).
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

func init() {
	score.Register(func(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
		if node.Label("disk") == "ssd" {
			return 150, sdk.OK()
		}
		return 50, sdk.OK()
	})
}

func main() {}
