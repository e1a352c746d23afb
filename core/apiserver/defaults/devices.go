package defaults

import (
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// devices sets upstream's defaults of the CSI and dynamic resource allocation kinds
// (pkg/apis/storage/v1 and pkg/apis/resource/v1 defaults.go, v1.37): a CSIDriver's
// booleans, fsGroupPolicy and lifecycle modes; a device request's allocation mode and
// count; a device taint's timeAdded. False for other types.
func devices(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		csiDriver(&o.Spec)
	case *resourcev1.ResourceClaim:
		deviceClaim(&o.Spec.Devices)
	case *resourcev1.ResourceClaimTemplate:
		deviceClaim(&o.Spec.Spec.Devices)
	case *resourcev1.ResourceSlice:
		for i := range o.Spec.Devices {
			for j := range o.Spec.Devices[i].Taints {
				deviceTaint(&o.Spec.Devices[i].Taints[j])
			}
		}
	case *resourcev1.DeviceTaintRule:
		deviceTaint(&o.Spec.Taint)
	default:
		return false
	}
	return true
}

func csiDriver(s *storagev1.CSIDriverSpec) {
	if s.AttachRequired == nil {
		s.AttachRequired = ptrTo(true)
	}
	for _, b := range []**bool{&s.PodInfoOnMount, &s.StorageCapacity, &s.RequiresRepublish,
		// SELinuxMountReadWriteOncePod is GA and VolumeLimitScaling on by default in 1.37.
		&s.SELinuxMount, &s.PreventPodSchedulingIfMissing} {
		if *b == nil {
			*b = ptrTo(false)
		}
	}
	if s.FSGroupPolicy == nil {
		p := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
		s.FSGroupPolicy = &p
	}
	if len(s.VolumeLifecycleModes) == 0 {
		s.VolumeLifecycleModes = []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
	}
}

func deviceClaim(c *resourcev1.DeviceClaim) {
	for i := range c.Requests {
		r := &c.Requests[i]
		if e := r.Exactly; e != nil {
			allocationMode(&e.AllocationMode, &e.Count)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			allocationMode(&s.AllocationMode, &s.Count)
		}
	}
}

func allocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func deviceTaint(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}
