package validation

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PersistentVolumes, PersistentVolumeClaims and StorageClasses, with upstream's rules and
// messages (pkg/apis/core/validation, pkg/apis/storage/validation) for the fields
// wasmkube acts on.

var (
	accessModesSupported  = sets.New(corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod)
	reclaimPolicies       = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain, corev1.PersistentVolumeReclaimRecycle)
	scReclaimPolicies     = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain)
	volumeBindingModes    = sets.New(storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer)
	volumeModes           = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)
	accessModesList       = sets.List(accessModesSupported)
	reclaimPolicyList     = sets.List(reclaimPolicies)
	scReclaimPolicyList   = sets.List(scReclaimPolicies)
	volumeBindingModeList = sets.List(volumeBindingModes)
)

// validateStorage dispatches the storage kinds; ok is false for other types.
func validateStorage(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		return validatePV(o), true
	case *corev1.PersistentVolumeClaim:
		return validatePVC(o), true
	case *storagev1.StorageClass:
		return validateStorageClass(o), true
	}
	return nil, false
}

func validateStorageUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *corev1.PersistentVolume:
		return validatePVUpdate(o, old.(*corev1.PersistentVolume)), true
	case *corev1.PersistentVolumeClaim:
		return validatePVCUpdate(o, old.(*corev1.PersistentVolumeClaim)), true
	case *storagev1.StorageClass:
		return validateStorageClassUpdate(o, old.(*storagev1.StorageClass)), true
	}
	return nil, false
}

func validateAccessModes(modes []corev1.PersistentVolumeAccessMode, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(modes) == 0 {
		errs = append(errs, field.Required(p, "at least 1 access mode is required"))
	}
	for _, m := range modes {
		if !accessModesSupported.Has(m) {
			errs = append(errs, field.NotSupported(p, m, accessModesList))
		}
	}
	if len(modes) > 1 {
		for _, m := range modes {
			if m == corev1.ReadWriteOncePod {
				errs = append(errs, field.Forbidden(p, "may not use ReadWriteOncePod with other access modes"))
			}
		}
	}
	return errs
}

func validateStorageQuantity(list corev1.ResourceList, p *field.Path) field.ErrorList {
	q, ok := list[corev1.ResourceStorage]
	if !ok {
		return field.ErrorList{field.Required(p.Key(string(corev1.ResourceStorage)), "")}
	}
	if q.Cmp(resource.Quantity{}) <= 0 {
		return field.ErrorList{field.Invalid(p.Key(string(corev1.ResourceStorage)), q.String(), "must be greater than zero")}
	}
	return nil
}

func validatePV(pv *corev1.PersistentVolume) field.ErrorList {
	errs := objectMeta(&pv.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	errs = append(errs, validateAccessModes(pv.Spec.AccessModes, spec.Child("accessModes"))...)
	if len(pv.Spec.Capacity) == 0 {
		errs = append(errs, field.Required(spec.Child("capacity"), ""))
	} else {
		errs = append(errs, validateStorageQuantity(pv.Spec.Capacity, spec.Child("capacity"))...)
	}
	if p := pv.Spec.PersistentVolumeReclaimPolicy; p != "" && !reclaimPolicies.Has(p) {
		errs = append(errs, field.NotSupported(spec.Child("persistentVolumeReclaimPolicy"), p, reclaimPolicyList))
	}
	if m := pv.Spec.VolumeMode; m != nil && !volumeModes.Has(*m) {
		errs = append(errs, field.NotSupported(spec.Child("volumeMode"), *m, sets.List(volumeModes)))
	}
	if pv.Spec.StorageClassName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(pv.Spec.StorageClassName, false) {
			errs = append(errs, field.Invalid(spec.Child("storageClassName"), pv.Spec.StorageClassName, msg))
		}
	}
	sources := 0
	if pv.Spec.HostPath != nil {
		sources++
		if pv.Spec.HostPath.Path == "" {
			errs = append(errs, field.Required(spec.Child("hostPath", "path"), ""))
		}
	}
	if pv.Spec.Local != nil {
		sources++
		if pv.Spec.Local.Path == "" {
			errs = append(errs, field.Required(spec.Child("local", "path"), ""))
		}
		if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
			errs = append(errs, field.Required(spec.Child("nodeAffinity"), "Local volume requires node affinity"))
		}
	}
	if sources == 0 && !otherPVSource(&pv.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Required(spec, "must specify a volume type"))
	} else if sources > 1 {
		errs = append(errs, field.Forbidden(spec, "may not specify more than 1 volume type"))
	}
	if na := pv.Spec.NodeAffinity; na != nil && na.Required != nil && len(na.Required.NodeSelectorTerms) == 0 {
		errs = append(errs, field.Required(spec.Child("nodeAffinity", "required", "nodeSelectorTerms"), "must have at least one node selector term"))
	}
	if r := pv.Spec.ClaimRef; r != nil && r.Name == "" {
		errs = append(errs, field.Required(spec.Child("claimRef", "name"), ""))
	}
	return errs
}

// otherPVSource: a volume type wasmkube stores but whose kubelet cannot mount (nfs, csi,
// ...): kept as upstream keeps it; a pod using it gets an UnsupportedVolume warning.
func otherPVSource(s *corev1.PersistentVolumeSource) bool {
	empty := corev1.PersistentVolumeSource{}
	return !equality.Semantic.DeepEqual(*s, empty)
}

func validatePVUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	errs := append(metaUpdate(&pv.ObjectMeta, &old.ObjectMeta), validatePV(pv)...)
	spec := field.NewPath("spec")
	if !equality.Semantic.DeepEqual(pv.Spec.PersistentVolumeSource, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(spec.Child("persistentvolumesource"), "spec.persistentvolumesource is forbidden once created"))
	}
	if !equality.Semantic.DeepEqual(pv.Spec.VolumeMode, old.Spec.VolumeMode) {
		errs = append(errs, field.Invalid(spec.Child("volumeMode"), pv.Spec.VolumeMode, "field is immutable"))
	}
	if old.Spec.NodeAffinity != nil && !equality.Semantic.DeepEqual(pv.Spec.NodeAffinity, old.Spec.NodeAffinity) {
		errs = append(errs, field.Invalid(spec.Child("nodeAffinity"), "", "field is immutable"))
	}
	return errs
}

func validatePVC(pvc *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := objectMeta(&pvc.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(errs, validatePVCSpec(&pvc.Spec, field.NewPath("spec"))...)
}

// validatePVCSpec is shared with StatefulSet volumeClaimTemplates.
func validatePVCSpec(s *corev1.PersistentVolumeClaimSpec, spec *field.Path) field.ErrorList {
	errs := validateAccessModes(s.AccessModes, spec.Child("accessModes"))
	errs = append(errs, validateStorageQuantity(s.Resources.Requests, spec.Child("resources", "requests"))...)
	if s.StorageClassName != nil && *s.StorageClassName != "" {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*s.StorageClassName, false) {
			errs = append(errs, field.Invalid(spec.Child("storageClassName"), *s.StorageClassName, msg))
		}
	}
	if m := s.VolumeMode; m != nil && !volumeModes.Has(*m) {
		errs = append(errs, field.NotSupported(spec.Child("volumeMode"), *m, sets.List(volumeModes)))
	}
	if s.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
	}
	return errs
}

func validatePVCUpdate(pvc, old *corev1.PersistentVolumeClaim) field.ErrorList {
	errs := append(metaUpdate(&pvc.ObjectMeta, &old.ObjectMeta), validatePVC(pvc)...)
	// What may change, as upstream: volumeName once from "", storageClassName once from nil,
	// resources.requests (expansion) and volumeAttributesClassName; the rest is immutable.
	a, b := pvc.Spec.DeepCopy(), old.Spec.DeepCopy()
	if b.VolumeName == "" {
		b.VolumeName = a.VolumeName
	}
	if b.StorageClassName == nil {
		b.StorageClassName = a.StorageClassName
	}
	a.Resources.Requests, b.Resources.Requests = nil, nil
	a.VolumeAttributesClassName, b.VolumeAttributesClassName = nil, nil
	if !equality.Semantic.DeepEqual(a, b) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"))
	}
	if old.Status.Phase == corev1.ClaimBound {
		oq, nq := old.Spec.Resources.Requests[corev1.ResourceStorage], pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if nq.Cmp(oq) < 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
		}
	}
	return errs
}

func validateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	errs := objectMeta(&sc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	if sc.Provisioner == "" {
		errs = append(errs, field.Required(field.NewPath("provisioner"), ""))
	} else if len(sc.Provisioner) > 63 {
		errs = append(errs, field.TooLong(field.NewPath("provisioner"), sc.Provisioner, 63))
	}
	if p := sc.ReclaimPolicy; p != nil && !scReclaimPolicies.Has(*p) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, scReclaimPolicyList))
	}
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(field.NewPath("volumeBindingMode"), ""))
	} else if !volumeBindingModes.Has(*m) {
		errs = append(errs, field.NotSupported(field.NewPath("volumeBindingMode"), *m, volumeBindingModeList))
	}
	return errs
}

func validateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := append(metaUpdate(&sc.ObjectMeta, &old.ObjectMeta), validateStorageClass(sc)...)
	if !equality.Semantic.DeepEqual(sc.Parameters, old.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != old.Provisioner {
		errs = append(errs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if !equality.Semantic.DeepEqual(sc.ReclaimPolicy, old.ReclaimPolicy) {
		errs = append(errs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	if !equality.Semantic.DeepEqual(sc.VolumeBindingMode, old.VolumeBindingMode) {
		errs = append(errs, field.Forbidden(field.NewPath("volumeBindingMode"), "field is immutable"))
	}
	return errs
}

// withClaimVolumes is the StatefulSet's pod template with a persistentVolumeClaim
// volume for each volumeClaimTemplate it does not already name, as its pods get them.
func withClaimVolumes(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	if len(spec.VolumeClaimTemplates) == 0 {
		return &spec.Template
	}
	t := spec.Template.DeepCopy()
	for _, c := range spec.VolumeClaimTemplates {
		has := false
		for _, v := range t.Spec.Volumes {
			has = has || v.Name == c.Name
		}
		if !has {
			t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}})
		}
	}
	return t
}
