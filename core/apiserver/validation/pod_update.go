package validation

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields is what a pod update may change, word for word as upstream lists it.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// validatePodUpdate allows only the mutations upstream allows on a pod spec: images, a shorter
// activeDeadlineSeconds, added tolerations, and terminationGracePeriodSeconds from negative to
// 1. Everything else is refused with one Forbidden error on spec carrying a diff.
func validatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	allErrs := metaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta)
	allErrs = append(allErrs, validatePodSpec(&newPod.Spec, field.NewPath("spec"))...)
	specPath := field.NewPath("spec")

	errs, stop := validateContainerUpdates(newPod.Spec.Containers, oldPod.Spec.Containers, specPath.Child("containers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}
	errs, stop = validateContainerUpdates(newPod.Spec.InitContainers, oldPod.Spec.InitContainers, specPath.Child("initContainers"))
	allErrs = append(allErrs, errs...)
	if stop {
		return allErrs
	}

	adsPath := specPath.Child("activeDeadlineSeconds")
	if newPod.Spec.ActiveDeadlineSeconds != nil {
		v := *newPod.Spec.ActiveDeadlineSeconds
		if v < 0 || v > math.MaxInt32 {
			return append(allErrs, field.Invalid(adsPath, v, utilvalidation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if oldPod.Spec.ActiveDeadlineSeconds != nil && *oldPod.Spec.ActiveDeadlineSeconds < v {
			return append(allErrs, field.Invalid(adsPath, v, "must be less than or equal to previous value"))
		}
	} else if oldPod.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Invalid(adsPath, newPod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}

	allErrs = append(allErrs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return allErrs
	}
	munged := *newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.Tolerations = oldPod.Spec.Tolerations
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if !apiequality.Semantic.DeepEqual(munged, oldPod.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff.Diff(oldPod.Spec, munged))))
	}
	return allErrs
}

// validateContainerUpdates refuses adding or removing containers (stop=true: nothing else can
// be compared) and requires every image to stay set.
func validateContainerUpdates(newCtrs, oldCtrs []corev1.Container, fldPath *field.Path) (field.ErrorList, bool) {
	if len(newCtrs) != len(oldCtrs) {
		return field.ErrorList{field.Forbidden(fldPath, "pod updates may not add or remove containers")}, true
	}
	var allErrs field.ErrorList
	for i, ctr := range newCtrs {
		if ctr.Image == "" {
			allErrs = append(allErrs, field.Required(fldPath.Index(i).Child("image"), ""))
		}
	}
	return allErrs, false
}

// validateOnlyAddedTolerations requires every old toleration to be kept; a toleration's
// tolerationSeconds may only be shortened.
func validateOnlyAddedTolerations(newTols, oldTols []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, old := range oldTols {
		found := false
		want := old
		want.TolerationSeconds = nil
		for _, n := range newTols {
			got := n
			got.TolerationSeconds = nil
			if apiequality.Semantic.DeepEqual(want, got) {
				found = true
				break
			}
		}
		if !found {
			allErrs = append(allErrs, field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds"))
			return allErrs
		}
	}
	return append(allErrs, validateTolerations(newTols, fldPath)...)
}
