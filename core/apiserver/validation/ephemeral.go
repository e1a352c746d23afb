package validation

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mirrorPodAnnotation marks a static pod's mirror in the API (upstream's
// kubernetes.io/config.mirror); static pods take no ephemeral containers.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// allowedEphemeralContainerFields are the fields of EphemeralContainerCommon an ephemeral
// container may set, as upstream's list of the same name (pkg/apis/core/validation): an
// ephemeral container is for looking at a running pod, not part of its workload, so
// ports, probes, lifecycle hooks and resources are refused. A field not listed is refused
// too, so that a field added to the type is considered before it is allowed.
var allowedEphemeralContainerFields = sets.New(
	"Name", "Image", "Command", "Args", "WorkingDir", "EnvFrom", "Env", "VolumeMounts", "VolumeDevices",
	"TerminationMessagePath", "TerminationMessagePolicy", "ImagePullPolicy", "SecurityContext",
	"Stdin", "StdinOnce", "TTY",
)

// ValidatePodEphemeralContainersUpdate checks a write to pods/<name>/ephemeralcontainers,
// as upstream's function of that name: the new pod must be valid (its ephemeral containers
// included), and existing ephemeral containers may be neither removed nor changed: the
// subresource only adds them.
func ValidatePodEphemeralContainersUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := metaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta)
	allErrs = append(allErrs, validatePodSpec(&newPod.Spec, field.NewPath("spec"))...)
	if _, ok := oldPod.Annotations[mirrorPodAnnotation]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations").Key(mirrorPodAnnotation), "static pods do not support ephemeral containers")}
	}
	specPath := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(newPod.Spec.EphemeralContainers))
	for i := range newPod.Spec.EphemeralContainers {
		byName[newPod.Spec.EphemeralContainers[i].Name] = &newPod.Spec.EphemeralContainers[i]
	}
	for _, old := range oldPod.Spec.EphemeralContainers {
		cur, ok := byName[old.Name]
		switch {
		case !ok:
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", old.Name)))
		case !apiequality.Semantic.DeepEqual(old, *cur):
			allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", old.Name, diff.Diff(old, *cur))))
		}
	}
	return allErrs
}

// ValidateEphemeralContainersUpdate is ValidatePodEphemeralContainersUpdate for the
// admission chain's signature.
func ValidateEphemeralContainersUpdate(obj, old runtime.Object) field.ErrorList {
	p, ok1 := obj.(*corev1.Pod)
	o, ok2 := old.(*corev1.Pod)
	if !ok1 || !ok2 {
		return field.ErrorList{field.InternalError(nil, errTypeMismatch{obj, old})}
	}
	return ValidatePodEphemeralContainersUpdate(p, o)
}

// validateEphemeralContainers checks spec.ephemeralContainers: each is a valid container
// whose name is unique among all of the pod's containers, sets only the allowed fields, and
// whose targetContainerName (when set) names one of the pod's init or app containers.
// others are the names of those containers.
func validateEphemeralContainers(ecs []corev1.EphemeralContainer, others sets.Set[string], volumes sets.Set[string], spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	// The container rules apply to what is left once the refused fields are reported, so
	// a refused probe is one error, not a probe error too.
	ctrs := make([]corev1.Container, len(ecs))
	for i := range ecs {
		ctrs[i] = corev1.Container(*ecs[i].EphemeralContainerCommon.DeepCopy())
		allErrs = append(allErrs, refuseEphemeralFields(&ctrs[i], fldPath.Index(i))...)
	}
	allErrs = append(allErrs, validateContainers(ctrs, false, volumes, others.Clone(), spec, fldPath)...)
	for i := range ecs {
		ec := &ecs[i]
		idxPath := fldPath.Index(i)
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(idxPath.Child("targetContainerName"), ec.TargetContainerName))
		}
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(idxPath.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return allErrs
}

// refuseEphemeralFields reports every set field of c that ephemeral containers may not
// have (by its JSON name, as upstream's validateFieldAllowList) and clears it in c.
func refuseEphemeralFields(c *corev1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if allowedEphemeralContainerFields.Has(f.Name) || v.Field(i).IsZero() {
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "cannot be set for an Ephemeral Container"))
		v.Field(i).SetZero()
	}
	return allErrs
}
