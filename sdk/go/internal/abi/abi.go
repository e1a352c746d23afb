// Package abi declares the host functions of wasmkube ABI v1 (docs/abi.md) for Go guests.
// On wasip1 they are wasm imports from the module "wasmkube"; on other targets they panic,
// so that plugin packages still compile (and their pure logic can be unit tested) on the
// developer's machine.
package abi

// Result codes of host functions that fill a buffer (docs/abi.md section 2).
const (
	NotFound    int32 = -1
	Unavailable int32 = -2
	Forbidden   int32 = -3
)

// Sizes of the fixed records, in int64 words.
const (
	PodRequestsWords   = 5
	NodeResourcesWords = 10
)

// Call counts entry-point calls. Guest-side caches compare against it so that data read
// in one call is never served in the next (another pod, other nodes).
var Call uint64

// BeginCall marks the start of an entry-point call.
func BeginCall() { Call++ }
