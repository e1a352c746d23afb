package validation

import (
	"fmt"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func validateDeployment(d *appsv1.Deployment) field.ErrorList {
	allErrs := objectMeta(&d.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

func validateDeploymentUpdate(d, old *appsv1.Deployment) field.ErrorList {
	allErrs := metaUpdate(&d.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	// apps/v1 made the selector immutable: changing it would orphan the old pods.
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(d.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	return allErrs
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(replicas), fldPath.Child("replicas"))...)
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, &spec.Template, "deployment", fldPath)...)
	allErrs = append(allErrs, validateDeploymentStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(*spec.ProgressDeadlineSeconds), fldPath.Child("progressDeadlineSeconds"))...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("progressDeadlineSeconds"), *spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

// validateWorkloadSelector checks a Deployment's or ReplicaSet's selector and its pod
// template: the selector is required, non-empty and must select the template's labels, and
// the template must be a valid pod that always restarts.
func validateWorkloadSelector(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, kind string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	selPath := fldPath.Child("selector")
	if sel == nil {
		allErrs = append(allErrs, field.Required(selPath, ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, selPath)...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			allErrs = append(allErrs, field.Invalid(selPath, sel, "empty selector is invalid for "+kind))
		}
	}
	tPath := fldPath.Child("template")
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		allErrs = append(allErrs, field.Invalid(selPath, sel, "invalid label selector"))
		selector = labels.Nothing()
	}
	if !selector.Empty() && sel != nil && !selector.Matches(labels.Set(tmpl.Labels)) {
		allErrs = append(allErrs, field.Invalid(tPath.Child("metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	allErrs = append(allErrs, validatePodTemplateSpec(tmpl, tPath)...)
	if tmpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		allErrs = append(allErrs, field.NotSupported(tPath.Child("spec", "restartPolicy"), tmpl.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	if tmpl.Spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, field.Forbidden(tPath.Child("spec", "activeDeadlineSeconds"), "activeDeadlineSeconds in ReplicaSet is not Supported"))
	}
	return allErrs
}

func validatePodTemplateSpec(tmpl *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, metav1validation.ValidateLabels(tmpl.Labels, fldPath.Child("metadata", "labels"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(tmpl.Annotations, fldPath.Child("metadata", "annotations"))...)
	allErrs = append(allErrs, validatePodSpec(&tmpl.Spec, fldPath.Child("spec"))...)
	if len(tmpl.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		} else {
			allErrs = append(allErrs, validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))...)
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), s.Type, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return allErrs
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDeployment, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	zero := intstr.FromInt32(0)
	maxUnavailable, maxSurge := &zero, &zero
	if ru.MaxUnavailable != nil {
		maxUnavailable = ru.MaxUnavailable
	}
	if ru.MaxSurge != nil {
		maxSurge = ru.MaxSurge
	}
	allErrs = append(allErrs, validatePositiveIntOrPercent(*maxUnavailable, fldPath.Child("maxUnavailable"))...)
	allErrs = append(allErrs, validatePositiveIntOrPercent(*maxSurge, fldPath.Child("maxSurge"))...)
	if intOrPercentValue(*maxUnavailable) == 0 && intOrPercentValue(*maxSurge) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable.String(), "may not be 0 when `maxSurge` is 0"))
	}
	if v, isPercent := percentValue(*maxUnavailable); isPercent && v > 100 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxUnavailable"), maxUnavailable.String(), "must not be greater than 100%"))
	}
	return allErrs
}

func validatePositiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var allErrs field.ErrorList
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			allErrs = append(allErrs, field.Invalid(fldPath, v.StrVal, msg))
		}
		return allErrs
	case intstr.Int:
		return apimachineryvalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, v.String(), "must be an integer or percentage (e.g '5%')")}
}

func percentValue(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String {
		return 0, false
	}
	s := strings.TrimSuffix(v.StrVal, "%")
	if s == v.StrVal {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, false
	}
	return n, true
}

func intOrPercentValue(v intstr.IntOrString) int {
	if n, ok := percentValue(v); ok {
		return n
	}
	if v.Type == intstr.Int {
		return v.IntValue()
	}
	return -1 // unparsable: reported by validatePositiveIntOrPercent
}

func validateReplicaSet(rs *appsv1.ReplicaSet) field.ErrorList {
	allErrs := objectMeta(&rs.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	replicas := int32(1)
	if spec.Replicas != nil {
		replicas = *spec.Replicas
	}
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(replicas), fldPath.Child("replicas"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateWorkloadSelector(spec.Selector, &spec.Template, "replicaset", fldPath)...)
	return allErrs
}

func validateReplicaSetUpdate(rs, old *appsv1.ReplicaSet) field.ErrorList {
	allErrs := metaUpdate(&rs.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, apimachineryvalidation.ValidateImmutableField(rs.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	return allErrs
}

func validateScale(s *autoscalingv1.Scale) field.ErrorList {
	allErrs := objectMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateScaleSpec(s)...)
}

func validateScaleSpec(s *autoscalingv1.Scale) field.ErrorList {
	if s.Spec.Replicas < 0 {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), s.Spec.Replicas, fmt.Sprintf("must be greater than or equal to %d", 0))}
	}
	return nil
}
