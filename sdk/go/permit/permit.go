// Package permit exports the Permit entry point (wasmkube_permit): allow the pod, deny it,
// or hold it (Wait) until a later Permit allows it by UID or its timeout passes
// (docs/abi.md section 1.4).
package permit

import (
	"strings"
	"time"
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Result is a Permit's answer: Allow(), Deny(reason) or Wait(timeout, group).
type Result struct {
	Status  sdk.Status
	Timeout time.Duration
	Group   string
}

// Allow lets the pod go on to PreBind.
func Allow() Result { return Result{} }

// Deny rejects the pod with reason: it is unreserved and requeued as unschedulable.
func Deny(reason string) Result { return Result{Status: sdk.Reject(reason)} }

// Wait holds the pod under group for at most timeout (1 ms to 15 minutes; the pod is
// rejected when it passes).
func Wait(timeout time.Duration, group string) Result {
	return Result{Status: sdk.Status{Code: sdk.CodeWait}, Timeout: timeout, Group: group}
}

// Func decides for pod on node (sdk.ChosenNode()).
type Func func(pod sdk.Pod, node sdk.Node) Result

var fn Func

// Register sets the plugin's Permit function. Call it from init().
func Register(f Func) { fn = f }

// Waiting returns the UIDs of the pods this plugin holds under group, in UID order. Call
// it only from the registered Func.
func Waiting(group string) []string {
	gp := unsafe.Pointer(unsafe.StringData(group))
	buf := make([]byte, 4096)
	n := abi.WaitingPods(gp, int32(len(group)), unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
	if int(n) > len(buf) {
		buf = make([]byte, n)
		n = abi.WaitingPods(gp, int32(len(group)), unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
	}
	if n <= 0 || int(n) > len(buf) {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(buf[:n]), "\n"), "\n")
}

// AllowWaiting releases a waiting pod from this plugin's wait; false when the plugin does
// not hold it. It takes effect when the Permit call returns.
func AllowWaiting(uid string) bool {
	return abi.WaitingAllow(unsafe.Pointer(unsafe.StringData(uid)), int32(len(uid))) == 0
}

// RejectWaiting rejects a waiting pod with reason; false when the plugin does not hold it.
func RejectWaiting(uid, reason string) bool {
	return abi.WaitingReject(unsafe.Pointer(unsafe.StringData(uid)), int32(len(uid)),
		unsafe.Pointer(unsafe.StringData(reason)), int32(len(reason))) == 0
}

func run() int32 {
	sdk.BeginCall()
	if fn == nil {
		sdk.SetReason("permit: no function registered (call permit.Register in init)")
		return int32(sdk.CodeError)
	}
	r := fn(sdk.Pod{}, sdk.ChosenNode())
	if r.Status.Code == sdk.CodeWait {
		ms := r.Timeout.Milliseconds()
		abi.PermitWait(int32(min(max(ms, 1), 900000)), unsafe.Pointer(unsafe.StringData(r.Group)), int32(len(r.Group)))
	}
	if !r.Status.IsSuccess() {
		sdk.SetReason(r.Status.Reason)
	}
	return int32(r.Status.Code)
}
