package validation

import (
	"fmt"
	"math"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The CSI kinds of storage.k8s.io/v1 (CSIDriver, CSINode, CSIStorageCapacity,
// VolumeAttachment) with the rules, messages and field paths of upstream's
// pkg/apis/storage/validation (v1.37). wasmkube runs no CSI driver; it serves these so that
// upstream components (kube-scheduler's volume plugins, CSI sidecars) find them.

const (
	csiNodeIDMaxLength             = 192
	maxAttachedVolumeMetadataSize  = 256 * (1 << 10) // 256 kB
	maxVolumeErrorMessageSize      = 1024
	csiTokenRequestMinExpiration   = 10 * 60
	csiTokenRequestMaxExpiration   = 1 << 32
	csiNodeAllocatableUpdateMinSec = 10
)

var (
	fsGroupPolicies    = sets.New(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy, storagev1.FileFSGroupPolicy, storagev1.NoneFSGroupPolicy)
	fsGroupPolicyList  = sets.List(fsGroupPolicies)
	volumeLifecycleSet = []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
)

func validateCSI(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateCSIDriverSpec(&o.Spec, field.NewPath("spec"))...), true
	case *storagev1.CSINode:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateCSINodeDrivers(o.Spec.Drivers, field.NewPath("spec", "drivers"))...), true
	case *storagev1.CSIStorageCapacity:
		return validateCSIStorageCapacity(o), true
	case *storagev1.VolumeAttachment:
		return validateVolumeAttachment(o), true
	}
	return nil, false
}

func validateCSIUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *storagev1.CSIDriver:
		od := old.(*storagev1.CSIDriver)
		errs := metaUpdate(&o.ObjectMeta, &od.ObjectMeta)
		errs = append(errs, validateCSIDriverSpec(&o.Spec, field.NewPath("spec"))...)
		// Upstream names the path attachedRequired, as its create rule does.
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.AttachRequired, od.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec.VolumeLifecycleModes, od.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
		return errs, true
	case *storagev1.CSINode:
		on := old.(*storagev1.CSINode)
		errs, _ := validateCSI(o)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &on.ObjectMeta)...)
		// A driver entry may not change once registered, except its allocatable count
		// (MutableCSINodeAllocatableCount, GA in 1.36).
		for _, od := range on.Spec.Drivers {
			for _, nd := range o.Spec.Drivers {
				if od.Name == nd.Name {
					a, b := od.DeepCopy(), nd.DeepCopy()
					a.Allocatable, b.Allocatable = nil, nil
					errs = append(errs, apimachineryvalidation.ValidateImmutableField(b, a, field.NewPath("spec", "drivers"))...)
				}
			}
		}
		return errs, true
	case *storagev1.CSIStorageCapacity:
		oc := old.(*storagev1.CSIStorageCapacity)
		errs := metaUpdate(&o.ObjectMeta, &oc.ObjectMeta)
		if !apiequality.Semantic.DeepEqual(o.NodeTopology, oc.NodeTopology) {
			errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), o.NodeTopology, "field is immutable"))
		}
		if o.StorageClassName != oc.StorageClassName {
			errs = append(errs, field.Invalid(field.NewPath("storageClassName"), o.StorageClassName, "field is immutable"))
		}
		return errs, true
	case *storagev1.VolumeAttachment:
		ov := old.(*storagev1.VolumeAttachment)
		errs := validateVolumeAttachment(o)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &ov.ObjectMeta)...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Spec, ov.Spec, field.NewPath("spec"))...)
		return errs, true
	}
	return nil, false
}

// csiDriverName is upstream's ValidateCSIDriverName: required, at most 63 characters, a
// DNS-1123 subdomain in any case.
func csiDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	if len(name) > 63 {
		errs = append(errs, field.TooLong(p, "", 63))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

func requiredBool(b *bool, p *field.Path) field.ErrorList {
	if b == nil {
		return field.ErrorList{field.Required(p, "")}
	}
	return nil
}

func validateCSIDriverSpec(spec *storagev1.CSIDriverSpec, p *field.Path) field.ErrorList {
	// Upstream's path for attachRequired is attachedRequired.
	errs := requiredBool(spec.AttachRequired, p.Child("attachedRequired"))
	errs = append(errs, requiredBool(spec.PodInfoOnMount, p.Child("podInfoOnMount"))...)
	errs = append(errs, requiredBool(spec.StorageCapacity, p.Child("storageCapacity"))...)
	if spec.FSGroupPolicy != nil && !fsGroupPolicies.Has(*spec.FSGroupPolicy) {
		errs = append(errs, field.NotSupported(p.Child("fsGroupPolicy"), spec.FSGroupPolicy, fsGroupPolicyList))
	}
	audiences := map[string]bool{}
	for i, tr := range spec.TokenRequests {
		ip := p.Child("tokenRequests").Index(i)
		if audiences[tr.Audience] {
			errs = append(errs, field.Duplicate(ip.Child("audience"), tr.Audience))
			continue
		}
		audiences[tr.Audience] = true
		if s := tr.ExpirationSeconds; s != nil {
			if *s < csiTokenRequestMinExpiration {
				errs = append(errs, field.Invalid(ip.Child("expirationSeconds"), *s, "may not specify a duration less than 10 minutes"))
			}
			if *s > csiTokenRequestMaxExpiration {
				errs = append(errs, field.Invalid(ip.Child("expirationSeconds"), *s, "may not specify a duration larger than 2^32 seconds"))
			}
		}
	}
	for _, m := range spec.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(p.Child("volumeLifecycleModes"), m, volumeLifecycleSet))
		}
	}
	// SELinuxMountReadWriteOncePod is GA and VolumeLimitScaling beta (on) in 1.37: both
	// fields are required, and defaulting sets them.
	errs = append(errs, requiredBool(spec.SELinuxMount, p.Child("seLinuxMount"))...)
	if s := spec.NodeAllocatableUpdatePeriodSeconds; s != nil && *s < csiNodeAllocatableUpdateMinSec {
		errs = append(errs, field.Invalid(p.Child("nodeAllocatableUpdatePeriodSeconds"), *s, "must be greater than or equal to 10 seconds"))
	}
	if spec.ServiceAccountTokenInSecrets != nil && len(spec.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(p.Child("serviceAccountTokenInSecrets"), spec.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	errs = append(errs, requiredBool(spec.PreventPodSchedulingIfMissing, p.Child("preventPodSchedulingIfMissing"))...)
	return errs
}

func validateCSINodeDrivers(drivers []storagev1.CSINodeDriver, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, d := range drivers {
		ip := p.Index(i)
		errs = append(errs, csiDriverName(d.Name, ip.Child("name"))...)
		if d.NodeID == "" {
			errs = append(errs, field.Required(ip.Child("nodeID"), d.NodeID))
		}
		if len(d.NodeID) > csiNodeIDMaxLength {
			errs = append(errs, field.Invalid(ip.Child("nodeID"), d.NodeID, fmt.Sprintf("must be %d characters or less", csiNodeIDMaxLength)))
		}
		if a := d.Allocatable; a != nil && a.Count != nil {
			errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(*a.Count), ip.Child("allocatable", "count"))...)
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(ip.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		keys := sets.New[string]()
		for _, k := range d.TopologyKeys {
			if k == "" {
				errs = append(errs, field.Required(ip, k))
			}
			if keys.Has(k) {
				errs = append(errs, field.Duplicate(ip, k))
			}
			keys.Insert(k)
			for _, msg := range utilvalidation.IsQualifiedName(k) {
				errs = append(errs, field.Invalid(ip, k, msg))
			}
		}
	}
	return errs
}

func validateCSIStorageCapacity(c *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := objectMeta(&c.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, metav1validation.ValidateLabelSelector(c.NodeTopology, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("nodeTopology"))...)
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), "must be greater than or equal to 0"))
	}
	return errs
}

func validateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	errs := objectMeta(&va.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	sp := field.NewPath("spec")
	errs = append(errs, csiDriverName(va.Spec.Attacher, sp.Child("attacher"))...)
	src := va.Spec.Source
	switch {
	case src.InlineVolumeSpec == nil && src.PersistentVolumeName == nil:
		errs = append(errs, field.Required(sp.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.InlineVolumeSpec != nil && src.PersistentVolumeName != nil:
		errs = append(errs, field.Forbidden(sp.Child("source"), "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
	case src.PersistentVolumeName != nil:
		if *src.PersistentVolumeName == "" {
			errs = append(errs, field.Required(sp.Child("source", "persistentVolumeName"), "must specify non empty persistentVolumeName"))
		}
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*src.PersistentVolumeName, false) {
			errs = append(errs, field.Invalid(sp.Child("source", "persistentVolumeName"), *src.PersistentVolumeName, msg))
		}
	}
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(sp.Child("nodeName"), va.Spec.NodeName, msg))
	}
	st := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachedVolumeMetadataSize {
		errs = append(errs, field.TooLong(st.Child("attachmentMetadata"), "", maxAttachedVolumeMetadataSize))
	}
	for _, ve := range []struct {
		name string
		e    *storagev1.VolumeError
	}{{"attachError", va.Status.AttachError}, {"detachError", va.Status.DetachError}} {
		name, e := ve.name, ve.e
		if e == nil {
			continue
		}
		if len(e.Message) > maxVolumeErrorMessageSize {
			errs = append(errs, field.TooLong(st.Child(name, "message"), "", maxVolumeErrorMessageSize))
		}
		if e.ErrorCode != nil && *e.ErrorCode < 0 {
			errs = append(errs, field.Invalid(st.Child(name, "errorCode"), *e.ErrorCode, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
		}
	}
	return errs
}
