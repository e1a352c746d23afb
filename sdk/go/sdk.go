// Package sdk is the Go guest SDK for wasmkube plugins (ABI v1, docs/abi.md).
//
// A plugin is a `package main` built with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// that registers its functions in init() through the extension-point packages, each of which
// exports exactly one ABI entry point, so a module exports only what it implements:
//
//	import (
//		sdk "github.com/wasmkube/wasmkube/sdk/go"
//		"github.com/wasmkube/wasmkube/sdk/go/filter"
//	)
//
//	func init() {
//		filter.Register(func(pod sdk.Pod, node sdk.Node) sdk.Status {
//			if node.Label("disk") != "ssd" {
//				return sdk.Reject("node has no ssd")
//			}
//			return sdk.OK()
//		})
//	}
//
//	func main() {}
//
// Data is pulled lazily from the host and cached for the current call only: a plugin that
// never looks at labels never pays for them.
package sdk

import (
	"fmt"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Code is the outcome of an entry point (docs/abi.md section 1.3).
type Code int32

const (
	// CodeSuccess allows the pod.
	CodeSuccess Code = 0
	// CodeError reports a plugin failure; the plugin's failurePolicy applies.
	CodeError Code = 1
	// CodeUnschedulable rejects; preemption may help.
	CodeUnschedulable Code = 2
	// CodeUnschedulableAndUnresolvable rejects; preemption cannot help.
	CodeUnschedulableAndUnresolvable Code = 3
	// CodeSkip (PreFilter, PreScore) skips the plugin's Filter/Score for this pod.
	CodeSkip Code = 5
)

// Status is a verdict: a code and, unless it is a success, a reason.
type Status struct {
	Code   Code
	Reason string
}

// OK is the success status.
func OK() Status { return Status{} }

// Reject is an Unschedulable status with a reason.
func Reject(reason string) Status { return Status{Code: CodeUnschedulable, Reason: reason} }

// Rejectf is Reject with a formatted reason.
func Rejectf(format string, a ...any) Status { return Reject(fmt.Sprintf(format, a...)) }

// Errorf is an Error status: the plugin cannot decide (bad args, unparsable object).
func Errorf(format string, a ...any) Status {
	return Status{Code: CodeError, Reason: fmt.Sprintf(format, a...)}
}

// Skip is the Skip status for PreFilter and PreScore.
func Skip() Status { return Status{Code: CodeSkip} }

// IsSuccess reports whether s allows the pod.
func (s Status) IsSuccess() bool { return s.Code == CodeSuccess }

// Resources is an amount of compute resources: cpu in millicores, memory and ephemeral
// storage in bytes, pods as a count.
type Resources struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
}

// Log levels of Log.
const (
	LevelDebug int32 = 0
	LevelInfo  int32 = 1
	LevelWarn  int32 = 2
	LevelError int32 = 3
)

// Log writes one line to the host's log, tagged with the plugin's name.
func Log(level int32, msg string) {
	if len(msg) == 0 {
		return
	}
	abi.Log(level, unsafe.Pointer(unsafe.StringData(msg)), int32(len(msg)))
}

// Logf is Log with formatting.
func Logf(level int32, format string, a ...any) { Log(level, fmt.Sprintf(format, a...)) }

// SetReason sets the reason of the current entry point's own status. Extension-point
// packages call it for the Status your function returns; call it yourself only from
// OnInit.
func SetReason(reason string) {
	if len(reason) == 0 {
		return
	}
	abi.StatusReason(unsafe.Pointer(unsafe.StringData(reason)), int32(len(reason)))
}

// BeginCall starts a new entry-point call: caches of the previous call are dropped. The
// extension-point packages call it; plugins never need to.
func BeginCall() {
	abi.BeginCall()
	nodeWin.n = 0
}

// ABIVersion is the version of docs/abi.md this SDK implements.
const ABIVersion = 1
