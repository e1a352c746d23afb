package defaults

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// storage sets upstream's defaults of PersistentVolumes (reclaim Retain, Filesystem mode,
// phase Pending), PersistentVolumeClaims (Filesystem mode, phase Pending) and
// StorageClasses (reclaim Delete, binding Immediate); false for other types.
func storage(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		if o.Spec.PersistentVolumeReclaimPolicy == "" {
			o.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
		}
		if o.Spec.VolumeMode == nil {
			m := corev1.PersistentVolumeFilesystem
			o.Spec.VolumeMode = &m
		}
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.VolumePending
		}
	case *corev1.PersistentVolumeClaim:
		if o.Spec.VolumeMode == nil {
			m := corev1.PersistentVolumeFilesystem
			o.Spec.VolumeMode = &m
		}
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.ClaimPending
		}
	case *storagev1.StorageClass:
		if o.ReclaimPolicy == nil {
			p := corev1.PersistentVolumeReclaimDelete
			o.ReclaimPolicy = &p
		}
		if o.VolumeBindingMode == nil {
			m := storagev1.VolumeBindingImmediate
			o.VolumeBindingMode = &m
		}
	default:
		return false
	}
	return true
}
