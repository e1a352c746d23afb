// Wrong on purpose: PreFilter keeps what it learns in a global, which another instance
// serving this pod's Filter does not have (conformance: "same answers on every instance").
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
	"github.com/wasmkube/wasmkube/sdk/go/prefilter"
)

var wantsSSD bool

func init() {
	prefilter.Register(func(pod sdk.Pod) sdk.Status {
		wantsSSD = pod.Label("app") == "zoned"
		return sdk.OK()
	})
	filter.Register(func(pod sdk.Pod, node sdk.Node) sdk.Status {
		if wantsSSD && node.Label("disk") != "ssd" {
			return sdk.Reject("no ssd")
		}
		return sdk.OK()
	})
}

func main() {}
