package sdk

import (
	"strings"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Pod is the pod of the current call. Its accessors pull data from the host on first use
// and cache it until the call ends.
type Pod struct{}

// PodRequests is the pod's effective request (docs/abi.md section 3). Its memory layout is
// the pod_requests record, so the host writes it in place.
type PodRequests struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// NonZeroMilliCPU and NonZeroMemory count containers without requests as 100m cpu and
	// 200Mi memory, as scoring does.
	NonZeroMilliCPU int64
	NonZeroMemory   int64
}

var podCache struct {
	call        uint64
	requests    PodRequests
	haveReq     bool
	scalars     []string
	haveScalars bool
}

func (Pod) fresh() {
	if podCache.call != abi.Call {
		podCache.call = abi.Call
		podCache.haveReq = false
		podCache.haveScalars = false
	}
}

// Requests returns the pod's effective resource requests (read from the host once per
// call). The pointer is valid until the call ends; do not keep it.
//
// The check for the cached value is small enough to be inlined where it is called: a
// function call in Go's wasm code costs about as much as a simple Filter's own work, and
// a Filter or Score asks for the requests once per node.
func (p Pod) Requests() *PodRequests {
	if podCache.call == abi.Call && podCache.haveReq {
		return &podCache.requests
	}
	return p.readRequests()
}

func (p Pod) readRequests() *PodRequests {
	p.fresh()
	if abi.PodRequests(unsafe.Pointer(&podCache.requests)) < 0 {
		podCache.requests = PodRequests{}
	}
	podCache.haveReq = true
	return &podCache.requests
}

// Name is metadata.name.
func (Pod) Name() string {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.PodName(b, c) })
	return s
}

// Namespace is metadata.namespace.
func (Pod) Namespace() string {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.PodNamespace(b, c) })
	return s
}

// Label returns the value of a label ("" when absent).
func (p Pod) Label(key string) string { v, _ := p.LookupLabel(key); return v }

// LookupLabel returns the value of a label and whether it is set.
func (Pod) LookupLabel(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.PodLabel(kp, kl, b, c) })
}

// Annotation returns the value of an annotation and whether it is set.
func (Pod) Annotation(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.PodAnnotation(kp, kl, b, c) })
}

// JSON returns the whole pod as Kubernetes JSON.
func (Pod) JSON() []byte {
	b, _ := readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.PodJSON(b, c) })
	return b
}

// ScalarNames lists the extended resources the pod requests (read once per call).
// Like Requests, the check for the cached list is inlined where it is called.
func (p Pod) ScalarNames() []string {
	if podCache.call == abi.Call && podCache.haveScalars {
		return podCache.scalars
	}
	return p.readScalarNames()
}

func (p Pod) readScalarNames() []string {
	p.fresh()
	podCache.scalars = nil
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return abi.PodScalarNames(b, c) })
	if code > 0 {
		podCache.scalars = splitLines(string(b))
	}
	podCache.haveScalars = true
	return podCache.scalars
}

// ScalarRequest is the pod's request of an extended resource.
func (Pod) ScalarRequest(name string) int64 {
	np, nl := strPtr(name)
	return abi.PodScalarRequest(np, nl)
}

func splitLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
