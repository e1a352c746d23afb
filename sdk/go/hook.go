package sdk

import (
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// CodeFailure is a Probe's failure (docs/abi.md section 1.3): the probe did not pass, and
// the reason is the message of the Unhealthy event. It is the same code as
// CodeUnschedulable, named for the kubelet kinds.
const CodeFailure Code = 2

// Container is the container of the current kubelet hook call: the one being probed or
// stopped. Its accessors read from the host on use.
type Container struct{}

// Name is the container's name, as in the pod's spec.
func (Container) Name() string {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.ContainerName(b, c) })
	return s
}

// ProbeKind says which of a container's probes a Probe call runs.
type ProbeKind string

// The probe kinds of Kubernetes.
const (
	StartupProbe   ProbeKind = "startup"
	LivenessProbe  ProbeKind = "liveness"
	ReadinessProbe ProbeKind = "readiness"
)

// ProbeKind is the kind of probe the current call runs; "" in a PreStop.
func (Container) ProbeKind() ProbeKind {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.ProbeKind(b, c) })
	return ProbeKind(s)
}

// IP is the pod's IP (status.podIP) in a kubelet hook call, "" when the pod has none yet.
// The network functions (HTTPGet, HTTPPost, TCPConnect) reach this address only.
func (Pod) IP() string {
	s, _ := readString(func(b unsafe.Pointer, c int32) int32 { return abi.PodIP(b, c) })
	return s
}
