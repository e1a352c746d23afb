package registry

import (
	corev1 "k8s.io/api/core/v1"
)

// qosClass computes a pod's quality-of-service class as upstream does: Guaranteed when
// every container has CPU and memory limits equal to its requests, BestEffort when no
// container requests or limits anything, Burstable otherwise.
func qosClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	all := append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...)
	for _, c := range all {
		for _, rn := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[rn]
			lim, hasLim := c.Resources.Limits[rn]
			if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
				any = true
			}
			if !hasLim || lim.IsZero() {
				guaranteed = false
				continue
			}
			if hasReq && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
