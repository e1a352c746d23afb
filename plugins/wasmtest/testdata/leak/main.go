// Wrong on purpose: every call keeps 256 bytes in a global (conformance: "memory stays bounded").
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
)

var seen [][]byte

func init() {
	filter.Register(func(pod sdk.Pod, node sdk.Node) sdk.Status {
		if node.Index() == 0 {
			seen = append(seen, make([]byte, 256))
		}
		return sdk.OK()
	})
}

func main() {}
