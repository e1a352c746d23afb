// Wrong on purpose: init reads the args but accepts any (conformance: "init refuses bad
// args with a reason").
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
)

var args struct {
	Label string `json:"label"`
}

func init() {
	sdk.OnInit(func() error {
		_ = sdk.DecodeArgs(&args) // the error is dropped
		return nil
	})
	filter.Register(func(pod sdk.Pod, node sdk.Node) sdk.Status {
		if args.Label != "" && node.Label(args.Label) == "" {
			return sdk.Reject("missing " + args.Label)
		}
		return sdk.OK()
	})
}

func main() {}
