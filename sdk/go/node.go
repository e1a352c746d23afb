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

// nodeRes receives node_resources: a pointer to a local would make the compiler move the
// local to the heap (an allocation per node); a guest instance is single-threaded.
var nodeRes NodeResources

// Resources returns the node's resources; ok is false when the index is not in the batch.
func (n Node) Resources() (NodeResources, bool) {
	if abi.NodeResources(n.index, unsafe.Pointer(&nodeRes)) < 0 {
		return NodeResources{}, false
	}
	return nodeRes, true
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
