// Package prestop exports the kubelet PreStop entry point (wasmkube_prestop). Importing it
// makes the module a preStop plugin; Register sets the function the kubelet calls once
// when a container whose pod asks for the plugin (hooks.wasmkube.io/prestop.<container>:
// <plugin>) is stopped, before SIGTERM. The call's time limit is what is left of the pod's
// grace period: sdk.Sleep and the network functions never wait past it.
package prestop

import (
	"fmt"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

// Func runs the hook for container c of pod. Return sdk.OK() when the container may be
// stopped, or sdk.Errorf with a reason (a FailedPreStopHook event). Either way the kubelet
// then sends SIGTERM and keeps the grace period.
type Func func(pod sdk.Pod, c sdk.Container) sdk.Status

var fn Func

// Register sets the plugin's PreStop function. Call it from init().
func Register(f Func) { fn = f }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("prestop: no function registered (call prestop.Register in init)")
		return int32(sdk.CodeError)
	}
	code, reason := result(fn(sdk.Pod{}, sdk.Container{}))
	sdk.SetReason(reason)
	return code
}

// result is the entry point's code and reason for st. A PreStop has only done and error:
// any other non-success status (a probe's Failure) becomes an Error with its reason, not a
// garbage result.
func result(st sdk.Status) (int32, string) {
	switch st.Code {
	case sdk.CodeSuccess:
		return 0, ""
	case sdk.CodeError:
		return int32(sdk.CodeError), st.Reason
	}
	if st.Reason == "" {
		return int32(sdk.CodeError), fmt.Sprintf("prestop: status code %d", st.Code)
	}
	return int32(sdk.CodeError), st.Reason
}
