// Package postbind exports the PostBind entry point (wasmkube_postbind): told once the
// pod's binding is written.
package postbind

import sdk "github.com/wasmkube/wasmkube/sdk/go"

// Func is told that pod was bound to node (sdk.ChosenNode()).
type Func func(pod sdk.Pod, node sdk.Node)

var fn Func

// Register sets the plugin's PostBind function. Call it from init().
func Register(f Func) { fn = f }

func run() int32 {
	sdk.BeginCall()
	if fn != nil {
		fn(sdk.Pod{}, sdk.ChosenNode())
	}
	return 0
}
