// Package validate exports the admission Validate entry point (wasmkube_validate).
// Importing it makes the module a validating admission policy; Register sets the function
// called for each API request the policy's rules match.
package validate

import (
	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/admit"
)

// Func decides whether the request is allowed: sdk.OK(), sdk.Deny / sdk.DenyField to
// refuse it, or sdk.Errorf when the policy cannot decide (its failurePolicy applies).
// Warnings (req.Warn) and audit annotations are kept whatever it returns.
type Func func(req sdk.Request) sdk.Status

var fn Func

// Register sets the policy's Validate function. Call it from init().
func Register(f Func) { fn = f }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("validate: no function registered (call validate.Register in init)")
		return int32(sdk.CodeError)
	}
	return admit.Report("validate", fn(sdk.Request{}))
}
