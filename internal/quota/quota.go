// Package quota computes what objects count against a ResourceQuota, as upstream's quota
// evaluators do: the API server's ResourceQuota admission charges a new object's usage,
// and the resourcequota controller recomputes status.used from the objects themselves.
// Everything here is pure.
package quota

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectCountNames maps resources to the standard names their counts are quota'd under
// besides count/<resource>[.<group>].
var ObjectCountNames = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "pods"}:                   corev1.ResourcePods,
	{Resource: "services"}:               corev1.ResourceServices,
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "persistentvolumeclaims"}: corev1.ResourcePersistentVolumeClaims,
}

// CountName is count/<resource> (core group) or count/<resource>.<group>.
func CountName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// ObjectUsage is the usage of one object of gr that is not a pod: its counts.
func ObjectUsage(gr schema.GroupResource) corev1.ResourceList {
	one := resource.MustParse("1")
	u := corev1.ResourceList{CountName(gr): one}
	if n, ok := ObjectCountNames[gr]; ok {
		u[n] = one.DeepCopy()
	}
	return u
}

// Terminal reports whether a pod no longer counts (it has finished).
func Terminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// PodUsage is a pod's usage: its counts and the requests and limits of its containers
// (init containers count by their maximum, as upstream's effective pod request).
func PodUsage(pod *corev1.Pod) corev1.ResourceList {
	u := ObjectUsage(schema.GroupResource{Resource: "pods"})
	if Terminal(pod) {
		return corev1.ResourceList{}
	}
	req, lim := podRequestsAndLimits(pod)
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := req[r]; ok {
			u["requests."+r] = q.DeepCopy()
			if r != corev1.ResourceEphemeralStorage {
				u[r] = q.DeepCopy()
			}
		}
		if q, ok := lim[r]; ok {
			u["limits."+r] = q.DeepCopy()
		}
	}
	return u
}

func podRequestsAndLimits(pod *corev1.Pod) (req, lim corev1.ResourceList) {
	req, lim = corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addTo(req, c.Resources.Requests)
		addTo(lim, c.Resources.Limits)
	}
	for _, c := range pod.Spec.InitContainers {
		maxInto(req, c.Resources.Requests)
		maxInto(lim, c.Resources.Limits)
	}
	addTo(req, pod.Spec.Overhead)
	if len(lim) > 0 {
		addTo(lim, pod.Spec.Overhead)
	}
	return req, lim
}

func addTo(dst, src corev1.ResourceList) {
	for k, v := range src {
		q := dst[k]
		q.Add(v)
		dst[k] = q
	}
}

func maxInto(dst, src corev1.ResourceList) {
	for k, v := range src {
		if q, ok := dst[k]; !ok || v.Cmp(q) > 0 {
			dst[k] = v.DeepCopy()
		}
	}
}

// Add returns a + b.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	addTo(out, a)
	addTo(out, b)
	return out
}

// Mask keeps only the names of hard, with zero for the ones usage lacks: status.used of a
// quota lists every resource it limits.
func Mask(usage, hard corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for k := range hard {
		if q, ok := usage[k]; ok {
			out[k] = q.DeepCopy()
		} else {
			out[k] = resource.MustParse("0")
		}
	}
	return out
}

// Exceeded lists the resources of hard that used + delta goes over, sorted; only the
// resources delta charges are checked (an object that adds nothing to an already
// exceeded resource is not refused, as upstream).
func Exceeded(hard, used, delta corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k, d := range delta {
		h, limited := hard[k]
		if !limited || d.Sign() == 0 {
			continue
		}
		total := used[k].DeepCopy()
		total.Add(d)
		if total.Cmp(h) > 0 {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Format is upstream's "name=value,name=value" of the named resources of l.
func Format(names []corev1.ResourceName, l corev1.ResourceList) string {
	parts := make([]string, 0, len(names))
	for _, n := range names {
		q := l[n]
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	return strings.Join(parts, ",")
}

// MissingRequests lists the compute resources hard limits (requests.cpu, limits.memory,
// cpu, ...) that some container of pod does not state: upstream refuses such a pod,
// since its usage of the resource is unknown.
func MissingRequests(pod *corev1.Pod, hard corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for k := range hard {
		var kind string
		var r corev1.ResourceName
		switch {
		case k == corev1.ResourceCPU || k == corev1.ResourceMemory:
			kind, r = "requests", k
		case strings.HasPrefix(string(k), "requests."):
			kind, r = "requests", corev1.ResourceName(strings.TrimPrefix(string(k), "requests."))
		case strings.HasPrefix(string(k), "limits."):
			kind, r = "limits", corev1.ResourceName(strings.TrimPrefix(string(k), "limits."))
		default:
			continue
		}
		if r != corev1.ResourceCPU && r != corev1.ResourceMemory {
			continue
		}
		for _, c := range pod.Spec.Containers {
			l := c.Resources.Requests
			if kind == "limits" {
				l = c.Resources.Limits
			}
			if _, ok := l[r]; !ok {
				out = append(out, k)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
