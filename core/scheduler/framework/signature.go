package framework

import (
	"context"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// SignFragment is one element of a pod's scheduling signature: the part of the pod a
// plugin's Filter and Score verdicts depend on. Fragments of several plugins with the
// same Key must carry the same Value (TaintToleration and NodeUnschedulable both sign
// the tolerations), so a Key names what is signed, not who signed it.
type SignFragment struct {
	Key   string
	Value any
}

// SignPlugin is implemented by PreFilter, Filter, PreScore and Score plugins that can
// say which part of a pod their verdicts depend on (upstream's KEP-5598). Two pods whose
// fragments are equal for every plugin of a profile get, on every node, the same Filter
// verdict and the same raw Score, and placing one of them changes no node's verdict or
// score but those of the node it went to. A plugin that cannot promise that for a pod
// (its verdicts depend on other pods' placement, as topology spread does) returns a
// non-success status: the pod is unsignable and is scheduled by a full pass.
//
// A profile with a plugin at those points that does not implement SignPlugin never
// batches (as upstream); every built-in plugin and every wasm plugin implements it (a
// wasm module without wasmkube_sign makes the pods it sees unsignable, not its profile).
type SignPlugin interface {
	Plugin
	SignPod(ctx context.Context, pod *v1.Pod) ([]SignFragment, *Status)
}

// Keys of the fragments the built-in plugins sign, as upstream's signer names.
const (
	SchedulerNameSignerName = "schedulerName"
	NodeNameSignerName      = "nodeName"
	TolerationsSignerName   = "tolerations"
	NodeAffinitySignerName  = "nodeAffinity"
	HostPortsSignerName     = "hostPorts"
	ResourcesSignerName     = "resources"
	VolumesSignerName       = "volumes"
	LabelsSignerName        = "labels"
	NamespaceSignerName     = "namespace"
)

// Unsignable is the status a SignPlugin returns for a pod it cannot sign.
func Unsignable(reason string) *Status { return NewStatus(Unschedulable, reason) }

// TolerationsSigner is the pod's tolerations.
func TolerationsSigner(pod *v1.Pod) any { return pod.Spec.Tolerations }

// NodeAffinitySigner is the pod's nodeSelector and required and preferred node affinity.
func NodeAffinitySigner(pod *v1.Pod) any {
	var na *v1.NodeAffinity
	if a := pod.Spec.Affinity; a != nil {
		na = a.NodeAffinity
	}
	return struct {
		Selector map[string]string `json:"selector,omitempty"`
		Affinity *v1.NodeAffinity  `json:"affinity,omitempty"`
	}{pod.Spec.NodeSelector, na}
}

// HostPortsSigner is the host ports the pod asks for, sorted.
func HostPortsSigner(pod *v1.Pod) any {
	ports := NewPodInfo(pod).Ports
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		out = append(out, PortKey(p.Protocol, p.HostIP, p.HostPort))
	}
	sort.Strings(out)
	return out
}

// ResourcesSigner is the pod's effective requests (and their non-zero form used to
// score), as NodeResourcesFit and BalancedAllocation compute them.
func ResourcesSigner(pod *v1.Pod) any {
	req, nz := PodRequests(pod)
	return [2]Resource{req, nz}
}

// VolumesSigner is the pod's volumes other than ConfigMap, Secret, DownwardAPI,
// projected and emptyDir ones (which no plugin filters on), as upstream's.
func VolumesSigner(pod *v1.Pod) any {
	var out []v1.Volume
	for _, v := range pod.Spec.Volumes {
		s := v.VolumeSource
		if s.ConfigMap != nil || s.Secret != nil || s.DownwardAPI != nil || s.Projected != nil || s.EmptyDir != nil {
			continue
		}
		out = append(out, v)
	}
	return out
}
