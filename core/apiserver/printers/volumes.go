package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Upstream's columns (pkg/printers/internalversion) for PersistentVolumes,
// PersistentVolumeClaims and StorageClasses.

var (
	pvColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]},
		{Name: "Claim", Type: "string", Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: corev1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]},
	}
	pvcColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]},
		{Name: "Volume", Type: "string", Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]},
		{Name: "Capacity", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]},
		{Name: "Access Modes", Type: "string", Description: corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		ageColumn,
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]},
	}
	storageClassColumns = []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Provisioner", Type: "string", Description: "Indicates the type of the provisioner."},
		{Name: "ReclaimPolicy", Type: "string", Description: "Indicates the type of the reclaim policy."},
		{Name: "VolumeBindingMode", Type: "string", Description: "Indicates when volume binding and dynamic provisioning should occur"},
		{Name: "AllowVolumeExpansion", Type: "string", Description: "Indicates whether the storage class allow volume expand"},
		ageColumn,
	}
)

// accessModes prints modes as upstream's GetAccessModesAsString: RWO, ROX, RWX, RWOP.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	add := func(m corev1.PersistentVolumeAccessMode, s string) {
		for _, x := range modes {
			if x == m {
				out = append(out, s)
				return
			}
		}
	}
	add(corev1.ReadWriteOnce, "RWO")
	add(corev1.ReadOnlyMany, "ROX")
	add(corev1.ReadWriteMany, "RWX")
	add(corev1.ReadWriteOncePod, "RWOP")
	return strings.Join(out, ",")
}

func volumeMode(m *corev1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

func unsetIfEmpty(s string) string {
	if s == "" {
		return "<unset>"
	}
	return s
}

func pvcClass(pvc *corev1.PersistentVolumeClaim) string {
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return pvc.Annotations[corev1.BetaStorageClassAnnotation]
}

func printPV(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return nil, nil, false
	}
	claim := ""
	if r := pv.Spec.ClaimRef; r != nil {
		claim = r.Namespace + "/" + r.Name
	}
	size := ""
	if q, ok := pv.Spec.Capacity[corev1.ResourceStorage]; ok {
		size = q.String()
	}
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	vac := ""
	if pv.Spec.VolumeAttributesClassName != nil {
		vac = *pv.Spec.VolumeAttributesClassName
	}
	return []any{pv.Name, size, accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy), phase,
		claim, pv.Spec.StorageClassName, unsetIfEmpty(vac), pv.Status.Reason, age(pv.CreationTimestamp, now), volumeMode(pv.Spec.VolumeMode)}, nil, true
}

func printPVC(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, nil, false
	}
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	size, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		modes = accessModes(pvc.Status.AccessModes)
		if q, ok := pvc.Status.Capacity[corev1.ResourceStorage]; ok {
			size = q.String()
		}
	}
	vac := ""
	if pvc.Spec.VolumeAttributesClassName != nil {
		vac = *pvc.Spec.VolumeAttributesClassName
	}
	return []any{pvc.Name, phase, pvc.Spec.VolumeName, size, modes, pvcClass(pvc), unsetIfEmpty(vac),
		age(pvc.CreationTimestamp, now), volumeMode(pvc.Spec.VolumeMode)}, nil, true
}

func printStorageClass(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	sc, ok := obj.(*storagev1.StorageClass)
	if !ok {
		return nil, nil, false
	}
	name := sc.Name
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
		name += " (default)"
	}
	reclaim := string(corev1.PersistentVolumeReclaimDelete)
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	mode := string(storagev1.VolumeBindingImmediate)
	if sc.VolumeBindingMode != nil {
		mode = string(*sc.VolumeBindingMode)
	}
	expand := false
	if sc.AllowVolumeExpansion != nil {
		expand = *sc.AllowVolumeExpansion
	}
	return []any{name, sc.Provisioner, reclaim, mode, expand, age(sc.CreationTimestamp, now)}, nil, true
}

func init() {
	register(corev1.SchemeGroupVersion.WithKind("PersistentVolume"), pvColumns, printPV)
	register(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), pvcColumns, printPVC)
	register(storagev1.SchemeGroupVersion.WithKind("StorageClass"), storageClassColumns, printStorageClass)
}
