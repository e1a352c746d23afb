// Package queueing exports wasmkube_events and wasmkube_queueing_hint: which cluster events
// can make a pod this plugin rejected schedulable, and, per pod and event, whether this
// one can (docs/abi.md section 1.4).
package queueing

import (
	"unsafe"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Action is a set of what happened to an object.
type Action int32

// The actions.
const (
	Add    Action = 1
	Delete Action = 2
	Update Action = 4
)

// Event is a registration: a resource ("Node" or "Pod") and the actions that may help.
type Event struct {
	Resource string
	Actions  Action
}

// Hint is a hint's verdict.
type Hint int32

const (
	// Queue: the event may help; the pod is retried.
	Queue Hint = 0
	// Skip: the event cannot help this pod.
	Skip Hint = 5
)

// EventInfo is the event a hint is asked about.
type EventInfo struct {
	Resource string
	Action   Action
	// Object is the new object as JSON (for a Delete, the deleted one); OldObject the
	// object before an Update (nil otherwise).
	Object, OldObject []byte
}

// HintFunc decides whether ev may make pod schedulable.
type HintFunc func(pod sdk.Pod, ev EventInfo) Hint

var (
	events []Event
	hint   HintFunc
)

// Register sets the events and the hint (nil: every registered event queues). Call it
// from init().
func Register(evs []Event, h HintFunc) { events, hint = evs, h }

func runEvents() int32 {
	sdk.BeginCall()
	for _, e := range events {
		abi.RegisterEvent(unsafe.Pointer(unsafe.StringData(e.Resource)), int32(len(e.Resource)), int32(e.Actions))
	}
	return 0
}

func read(fn func(unsafe.Pointer, int32) int32) []byte {
	buf := make([]byte, 4096)
	n := fn(unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
	if int(n) > len(buf) {
		buf = make([]byte, n)
		n = fn(unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
	}
	if n < 0 || int(n) > len(buf) {
		return nil
	}
	return buf[:n]
}

func runHint() int32 {
	sdk.BeginCall()
	if hint == nil {
		return int32(Queue)
	}
	ev := EventInfo{Resource: string(read(abi.EventResource)), Action: Action(abi.EventAction()),
		Object: read(abi.EventObjectJSON), OldObject: read(abi.EventOldObjectJSON)}
	return int32(hint(sdk.Pod{}, ev))
}
