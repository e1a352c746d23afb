package sdk

import (
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// CodeWait (Permit) holds the pod until a later Permit allows it or its timeout passes.
const CodeWait Code = 4

// UID is the pod's metadata.uid (what a Permit allows or rejects a waiting pod by).
func (Pod) UID() string {
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return abi.PodUID(b, c) })
	if code < 0 {
		return ""
	}
	return string(b)
}

// ChosenNode is the node chosen for the pod, in Reserve, Unreserve, Permit, PreBind and
// PostBind (node 0: its name, labels, taints and JSON; not its resources).
func ChosenNode() Node { return NodeAt(0) }

// Shared are the plugin's counters, shared by all its instances and kept across config
// swaps (docs/abi.md section 1.4). Only Reserve, Unreserve, Permit, PreBind and PostBind
// may change them.
var Shared shared

type shared struct{}

// Add adds delta to key and returns the new value.
func (shared) Add(key string, delta int64) int64 {
	p, l := strPtr(key)
	return abi.SharedAdd(p, l, delta)
}

// Get returns the value of key (0 when never set).
func (shared) Get(key string) int64 {
	p, l := strPtr(key)
	return abi.SharedGet(p, l)
}
