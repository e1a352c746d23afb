package schedwasm

import (
	"encoding/binary"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// PodRequests is a pod's effective request as the pod_requests host function presents it.
type PodRequests struct {
	MilliCPU, Memory, EphemeralStorage int64
	NonZeroMilliCPU, NonZeroMemory     int64
	// Scalar holds extended resources by name.
	Scalar map[v1.ResourceName]int64
	// scalarNames is the newline-terminated, sorted list of Scalar's names.
	scalarNames string
}

// NewPodRequests computes the effective request of pod (docs/abi.md section 3) with the
// scheduler's own helper, so that wasm and native plugins see the same numbers.
func NewPodRequests(pod *v1.Pod) *PodRequests {
	if pod == nil {
		return &PodRequests{}
	}
	req, nz := framework.PodRequests(pod)
	r := &PodRequests{
		MilliCPU: req.MilliCPU, Memory: req.Memory, EphemeralStorage: req.EphemeralStorage,
		NonZeroMilliCPU: nz.MilliCPU, NonZeroMemory: nz.Memory,
		Scalar: req.ScalarResources,
	}
	if len(r.Scalar) > 0 {
		names := make([]string, 0, len(r.Scalar))
		for n := range r.Scalar {
			names = append(names, string(n))
		}
		sort.Strings(names)
		r.scalarNames = strings.Join(names, "\n") + "\n"
	}
	return r
}

// encodePodRequests lays out the 40-byte pod_requests record.
func encodePodRequests(r *PodRequests, out []byte) {
	for i, v := range [5]int64{r.MilliCPU, r.Memory, r.EphemeralStorage, r.NonZeroMilliCPU, r.NonZeroMemory} {
		binary.LittleEndian.PutUint64(out[i*8:], uint64(v))
	}
}

// encodeNodeResources lays out the 80-byte node_resources record.
func encodeNodeResources(n *framework.NodeInfo, out []byte) {
	w := [10]int64{
		n.Allocatable.MilliCPU, n.Allocatable.Memory, n.Allocatable.EphemeralStorage, n.Allocatable.AllowedPodNumber,
		n.Requested.MilliCPU, n.Requested.Memory, n.Requested.EphemeralStorage, int64(len(n.Pods)),
		n.NonZeroRequested.MilliCPU, n.NonZeroRequested.Memory,
	}
	for i, v := range w {
		binary.LittleEndian.PutUint64(out[i*8:], uint64(v))
	}
}

// encodeTaints renders taints as node_taints text: `key=value:Effect\n` per taint.
func encodeTaints(taints []v1.Taint) []byte {
	var b []byte
	for _, t := range taints {
		b = append(b, t.Key...)
		if t.Value != "" {
			b = append(b, '=')
			b = append(b, t.Value...)
		}
		b = append(b, ':')
		b = append(b, t.Effect...)
		b = append(b, '\n')
	}
	return b
}
