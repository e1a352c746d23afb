// Command go-empty is a Go SDK Filter and Score that read nothing: BenchmarkFilterScore's
// floor for the Go SDK (its loop over the batch, the callback per node, the scores handed
// to the host), against which node-resources-fit and pack-score add their reads and checks.
package main

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
	"github.com/wasmkube/wasmkube/sdk/go/score"
)

func init() {
	filter.Register(func(sdk.Pod, sdk.Node) sdk.Status { return sdk.OK() })
	score.Register(func(sdk.Pod, sdk.Node) (int64, sdk.Status) { return 0, sdk.OK() })
}

func main() {}
