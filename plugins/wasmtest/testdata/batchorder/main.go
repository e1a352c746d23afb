// Wrong on purpose: the score depends on the node's place in its batch (conformance:
// "answers do not depend on batch splits or node order").
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

func init() {
	score.Register(func(pod sdk.Pod, node sdk.Node) (int64, sdk.Status) {
		return min(int64(node.Index())*5, 100), sdk.OK()
	})
}

func main() {}
