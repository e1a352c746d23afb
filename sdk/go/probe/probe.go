// Package probe exports the kubelet Probe entry point (wasmkube_probe). Importing it makes
// the module a probe plugin; Register sets the function the kubelet calls once per probe
// period for a container whose pod asks for the plugin
// (hooks.wasmkube.io/<startup|liveness|readiness>.<container>: <plugin>). The kubelet keeps
// the probe's timing: the call's time limit is the probe's timeoutSeconds, and its
// thresholds count the results.
package probe

import (
	"fmt"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

// Func probes container c of pod. Return Success, Failure with a reason (the message of the
// Unhealthy event), or sdk.Errorf when the plugin itself cannot decide (its failurePolicy
// then says whether that counts as a failure or a success). c.ProbeKind() says which probe
// runs; the network functions of sdk (HTTPGet, TCPConnect) reach the pod's IP.
type Func func(pod sdk.Pod, c sdk.Container) sdk.Status

var fn Func

// Register sets the plugin's Probe function. Call it from init().
func Register(f Func) { fn = f }

// Success is a passed probe.
func Success() sdk.Status { return sdk.OK() }

// Failure is a failed probe with its reason.
func Failure(reason string) sdk.Status { return sdk.Status{Code: sdk.CodeFailure, Reason: reason} }

// Failuref is Failure with a formatted reason.
func Failuref(format string, a ...any) sdk.Status { return Failure(fmt.Sprintf(format, a...)) }

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("probe: no function registered (call probe.Register in init)")
		return int32(sdk.CodeError)
	}
	code, reason := result(fn(sdk.Pod{}, sdk.Container{}))
	sdk.SetReason(reason)
	return code
}

// result is the entry point's code and reason for st. A code a probe may not return (the
// scheduler's 3 or 5) becomes an Error naming it instead of a garbage result.
func result(st sdk.Status) (int32, string) {
	switch st.Code {
	case sdk.CodeSuccess:
		return 0, ""
	case sdk.CodeError, sdk.CodeFailure:
		return int32(st.Code), st.Reason
	}
	return int32(sdk.CodeError), fmt.Sprintf("probe: status code %d is not a probe result (0 success, 2 failure, 1 error): %s", st.Code, st.Reason)
}
