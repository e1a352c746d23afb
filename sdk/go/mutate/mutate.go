// Package mutate exports the admission Mutate entry point (wasmkube_mutate). Importing it
// makes the module a mutating admission policy; Register sets the function called for each
// API request the policy's rules match.
package mutate

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
	"github.com/wasmkube/wasmkube/sdk/go/internal/admit"
)

// Func changes the new object by adding operations to p, which starts empty on each call,
// and returns sdk.OK(); sdk.Deny refuses the request (p is then dropped); sdk.Errorf is the
// policy's Error (its failurePolicy applies, p is dropped). A policy with nothing to change
// returns OK with p empty: no patch is sent.
type Func func(req sdk.Request, p *sdk.Patch) sdk.Status

var fn Func

// patch is reused by every call, so that its buffer is allocated once per instance.
var patch sdk.Patch

// Register sets the policy's Mutate function. Call it from init().
func Register(f Func) { fn = f }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("mutate: no function registered (call mutate.Register in init)")
		return int32(sdk.CodeError)
	}
	patch.Reset()
	code := admit.Report("mutate", fn(sdk.Request{}, &patch))
	if code != int32(sdk.CodeSuccess) {
		return code
	}
	if err := patch.Err(); err != nil {
		sdk.SetReason("mutate: " + err.Error())
		return int32(sdk.CodeError)
	}
	if patch.Len() > 0 {
		b := patch.Bytes()
		abi.SetPatch(unsafe.Pointer(unsafe.SliceData(b)), int32(len(b)))
	}
	return int32(sdk.CodeSuccess)
}
