package sdk

import (
	"strings"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Node is one node of the current batch, by index. Accessors pull from the host on use.
type Node struct {
	index int32
}

// NodeAt returns the node with batch index i (0 .. count-1 of the current call).
func NodeAt(i int32) Node { return Node{index: i} }

// Index is the node's index in the current batch.
func (n Node) Index() int32 { return n.index }

// NodeResources is a node's allocatable capacity and what its pods already request. Its
// memory layout is the node_resources record (docs/abi.md 4.3), so the host writes it in
// place: reading a node's resources costs one host call and no decoding.
type NodeResources struct {
	Allocatable Resources
	// Requested sums the requests of the pods on the node; Requested.Pods counts them.
	Requested Resources
	// NonZeroRequested counts pods without requests as 100m cpu and 200Mi memory.
	NonZeroRequested NonZero
}

// NonZero is cpu and memory with scoring's defaults for missing requests.
type NonZero struct {
	MilliCPU int64
	Memory   int64
}

// resWindow is how many nodes' records one node_resources_range call reads: a batch of
// 5000 nodes costs 20 crossings instead of 5000 (a crossing costs about what a simple
// Filter does for a node), and the window stays at 20 KiB.
const resWindow = 256

// nodeWin holds the node_resources records of nodes lo .. lo+n-1 of the current
// call (BeginCall empties it). It is a global, not a local (a pointer to a local passed to
// the host would move it to the heap); a guest instance is single-threaded.
var nodeWin struct {
	lo, n uint32
	recs  [resWindow]NodeResources
}

// Resources returns the node's resources; ok is false when the index is not in the batch.
// It returns a copy: ResourcesRef costs less.
func (n Node) Resources() (NodeResources, bool) {
	r := n.ResourcesRef()
	if r == nil {
		return NodeResources{}, false
	}
	return *r, true
}

// ResourcesRef returns the node's resources, or nil when the index is not in the batch.
// The record is the SDK's: valid until the call ends, not to be changed. The first read of
// a node outside the current window reads that node and up to 255 after it from the host
// in one call (node_resources_range), so a Filter or Score over a batch costs one crossing
// per 256 nodes; and the record is not copied (an 80-byte copy is a memory.copy in Go's
// wasm code, which costs more than the rest of a simple Filter).
//
// The window check is small enough to be inlined where it is called (a call in Go's wasm
// code costs about as much as the check itself and the Filter's own work).
func (n Node) ResourcesRef() *NodeResources {
	if i := uint32(n.index) - nodeWin.lo; i < nodeWin.n {
		return &nodeWin.recs[i%resWindow] // n <= resWindow: the modulo only spares a bounds check
	}
	return readWindow(n.index)
}

// readWindow reads the records of node index and up to resWindow-1 after it.
func readWindow(index int32) *NodeResources {
	w := &nodeWin
	got := abi.NodeResourcesRange(index, resWindow, unsafe.Pointer(&w.recs[0]))
	if got <= 0 {
		w.n = 0
		return nil
	}
	w.lo, w.n = uint32(index), uint32(min(got, resWindow))
	return &w.recs[0]
}

// Name is the node's metadata.name.
func (n Node) Name() string {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.NodeName(n.index, b, c) })
	return s
}

// Label returns the value of a label ("" when absent).
func (n Node) Label(key string) string { v, _ := n.LookupLabel(key); return v }

// LookupLabel returns the value of a label and whether it is set.
func (n Node) LookupLabel(key string) (string, bool) {
	kp, kl := strPtr(key)
	return readString(func(b unsafe.Pointer, c int32) int32 { return abi.NodeLabel(n.index, kp, kl, b, c) })
}

// Taint is a node taint.
type Taint struct {
	Key, Value, Effect string
}

// Taints returns the node's taints.
func (n Node) Taints() []Taint {
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return abi.NodeTaints(n.index, b, c) })
	if code <= 0 {
		return nil
	}
	return parseTaints(string(b))
}

// parseTaints decodes the node_taints text: one `key=value:Effect` (or `key:Effect`) per line.
func parseTaints(s string) []Taint {
	var out []Taint
	for _, line := range strings.Split(s, "\n") {
		if line == "" {
			continue
		}
		var t Taint
		kv, effect, _ := cutLast(line, ":")
		t.Effect = effect
		t.Key, t.Value, _ = strings.Cut(kv, "=")
		out = append(out, t)
	}
	return out
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}

// JSON returns the whole node as Kubernetes JSON.
func (n Node) JSON() []byte {
	b, _ := readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.NodeJSON(n.index, b, c) })
	return b
}

// Scalar returns an extended resource of the node: allocatable (requested=false) or the
// sum its pods request (requested=true).
func (n Node) Scalar(name string, requested bool) int64 {
	np, nl := strPtr(name)
	which := int32(0)
	if requested {
		which = 1
	}
	return abi.NodeScalar(n.index, which, np, nl)
}
