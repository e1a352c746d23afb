package validation

import (
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/conversion"
)

// The rules of this file are upstream's pkg/apis/autoscaling/validation for
// HorizontalPodAutoscaler (autoscaling/v2), with the same messages and field paths. As in
// upstream without the HPAScaleToZero feature gate, minReplicas is at least 1. Upstream's
// "must specify at least one Policy" is not checked: there it can only fire after its
// defaulting filled in the policies, which this API server does not do (the controller
// applies the default behavior when none is given, core/controller/podautoscaler).

// MaxHPAStabilizationWindowSeconds and MaxHPAPeriodSeconds are upstream's limits.
const (
	MaxHPAStabilizationWindowSeconds int32 = 3600
	MaxHPAPeriodSeconds              int32 = 1800
)

// validateAutoscaling reports whether obj is one of this file's kinds, and its errors on create.
func validateAutoscaling(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateHPASpec(&o.Spec, field.NewPath("spec"))...), true
	case *autoscalingv1.HorizontalPodAutoscaler:
		errs := objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateHPAV1(o, false)...), true
	}
	return nil, false
}

// validateAutoscalingUpdate is validateAutoscaling for an update (and a status update).
func validateAutoscalingUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		errs := metaUpdate(&o.ObjectMeta, &old.(*autoscalingv2.HorizontalPodAutoscaler).ObjectMeta)
		errs = append(errs, validateHPASpec(&o.Spec, field.NewPath("spec"))...)
		return append(errs, validateHPAStatus(&o.Status, field.NewPath("status"))...), true
	case *autoscalingv1.HorizontalPodAutoscaler:
		errs := metaUpdate(&o.ObjectMeta, &old.(*autoscalingv1.HorizontalPodAutoscaler).ObjectMeta)
		return append(errs, validateHPAV1(o, true)...), true
	}
	return nil, false
}

// validateHPAV1 validates an autoscaling/v1 HPA as the v2 object it is stored as (upstream
// validates the internal object either way), with the paths of what a v1 client wrote: the
// CPU metric made from spec.targetCPUUtilizationPercentage is reported as that field, a
// malformed round-trip annotation as metadata.annotations[key].
func validateHPAV1(o *autoscalingv1.HorizontalPodAutoscaler, status bool) field.ErrorList {
	v2, err := conversion.HPAFromV1(o)
	if err != nil {
		var ae *conversion.AnnotationError
		if errors.As(err, &ae) {
			return field.ErrorList{ae.FieldError(o.Annotations)}
		}
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	errs := validateHPASpec(&v2.Spec, field.NewPath("spec"))
	if status {
		errs = append(errs, validateHPAStatus(&v2.Status, field.NewPath("status"))...)
	}
	if o.Spec.TargetCPUUtilizationPercentage != nil {
		cpu := field.NewPath("spec", "metrics").Index(len(v2.Spec.Metrics)-1).Child("resource", "target", "averageUtilization").String()
		for _, e := range errs {
			if e.Field == cpu {
				e.Field = "spec.targetCPUUtilizationPercentage"
			}
		}
	}
	return errs
}

func validateHPASpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateCrossVersionRef(spec.ScaleTargetRef, fldPath.Child("scaleTargetRef"))...)
	for i, m := range spec.Metrics {
		errs = append(errs, validateMetricSpec(m, fldPath.Child("metrics").Index(i))...)
	}
	if spec.Behavior != nil {
		bp := fldPath.Child("behavior")
		errs = append(errs, validateScalingRules(spec.Behavior.ScaleUp, bp.Child("scaleUp"))...)
		errs = append(errs, validateScalingRules(spec.Behavior.ScaleDown, bp.Child("scaleDown"))...)
	}
	return errs
}

func validateCrossVersionRef(ref autoscalingv2.CrossVersionObjectReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ref.Kind) == 0 {
		errs = append(errs, field.Required(fldPath.Child("kind"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(fldPath.Child("kind"), ref.Kind, msg))
		}
	}
	if len(ref.Name) == 0 {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	} else {
		for _, msg := range path.IsValidPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("name"), ref.Name, msg))
		}
	}
	if ref.APIVersion != "" {
		if _, err := schema.ParseGroupVersion(ref.APIVersion); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("apiVersion"), ref.APIVersion, err.Error()))
		}
	}
	return errs
}

func validateMetricSpec(spec autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Type) == 0 {
		errs = append(errs, field.Required(fldPath.Child("type"), "must specify a metric source type"))
	}
	// As upstream: the source the type names must be set, and no other.
	present := map[string]bool{"object": spec.Object != nil, "pods": spec.Pods != nil, "resource": spec.Resource != nil,
		"external": spec.External != nil, "containerResource": spec.ContainerResource != nil}
	expected := ""
	switch spec.Type {
	case "":
	case autoscalingv2.ObjectMetricSourceType:
		expected = "object"
	case autoscalingv2.PodsMetricSourceType:
		expected = "pods"
	case autoscalingv2.ResourceMetricSourceType:
		expected = "resource"
	case autoscalingv2.ExternalMetricSourceType:
		expected = "external"
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected = "containerResource"
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("type"), spec.Type, []string{"ContainerResource", "External", "Object", "Pods", "Resource"}))
	}
	if expected != "" && !present[expected] {
		errs = append(errs, field.Required(fldPath.Child(expected), "must populate information for the given metric source"))
	}
	for _, src := range []string{"object", "pods", "resource", "external", "containerResource"} {
		if present[src] && src != expected {
			errs = append(errs, field.Forbidden(fldPath.Child(src), "must populate the given metric source only"))
		}
	}
	if spec.Object != nil {
		p := fldPath.Child("object")
		errs = append(errs, validateCrossVersionRef(spec.Object.DescribedObject, p.Child("describedObject"))...)
		errs = append(errs, validateMetricIdentifier(spec.Object.Metric, p.Child("metric"))...)
		errs = append(errs, validateMetricTarget(spec.Object.Target, p.Child("target"))...)
		if spec.Object.Target.Value == nil && spec.Object.Target.AverageValue == nil {
			errs = append(errs, field.Required(p.Child("target").Child("value"), "must set either a target value or averageValue"))
		}
	}
	if spec.Pods != nil {
		p := fldPath.Child("pods")
		errs = append(errs, validateMetricIdentifier(spec.Pods.Metric, p.Child("metric"))...)
		errs = append(errs, validateMetricTarget(spec.Pods.Target, p.Child("target"))...)
		if spec.Pods.Target.AverageValue == nil {
			errs = append(errs, field.Required(p.Child("target").Child("averageValue"), "must specify a positive target averageValue"))
		}
	}
	if spec.External != nil {
		p := fldPath.Child("external")
		errs = append(errs, validateMetricIdentifier(spec.External.Metric, p.Child("metric"))...)
		errs = append(errs, validateMetricTarget(spec.External.Target, p.Child("target"))...)
		t := spec.External.Target
		if t.Value == nil && t.AverageValue == nil {
			errs = append(errs, field.Required(p.Child("target").Child("value"), "must set either a target value for metric or a per-pod target"))
		}
		if t.Value != nil && t.AverageValue != nil {
			errs = append(errs, field.Invalid(p.Child("target").Child("value"), t.Value, "may not set both a target value for metric and a per-pod target"))
		}
	}
	if spec.Resource != nil {
		errs = append(errs, validateResourceTarget(string(spec.Resource.Name), spec.Resource.Target, fldPath.Child("resource"))...)
	}
	if spec.ContainerResource != nil {
		p := fldPath.Child("containerResource")
		errs = append(errs, validateResourceTarget(string(spec.ContainerResource.Name), spec.ContainerResource.Target, p)...)
		if len(spec.ContainerResource.Container) == 0 {
			errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
		}
	}
	return errs
}

func validateResourceTarget(name string, t autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(name) == 0 {
		errs = append(errs, field.Required(fldPath.Child("name"), "must specify a resource name"))
	}
	errs = append(errs, validateMetricTarget(t, fldPath.Child("target"))...)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(fldPath.Child("target").Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Invalid(fldPath.Child("target").Child("averageValue"), t.AverageValue, "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, fldPath *field.Path) field.ErrorList {
	if len(id.Name) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range path.IsValidPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), id.Name, msg))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(t.Type) == 0 {
		errs = append(errs, field.Required(fldPath.Child("type"), "must specify a metric target type"))
	} else if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(fldPath.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("value"), t.Value.String(), "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue.String(), "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateScalingRules(r *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > MaxHPAStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w,
				fmt.Sprintf("must be less than or equal to %v", MaxHPAStabilizationWindowSeconds)))
		}
	}
	if sp := r.SelectPolicy; sp != nil && *sp != autoscalingv2.MaxChangePolicySelect && *sp != autoscalingv2.MinChangePolicySelect && *sp != autoscalingv2.DisabledPolicySelect {
		errs = append(errs, field.NotSupported(fldPath.Child("selectPolicy"), *sp, []string{"Disabled", "Max", "Min"}))
	}
	for i, p := range r.Policies {
		ip := fldPath.Child("policies").Index(i)
		if p.Type != autoscalingv2.PodsScalingPolicy && p.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(ip.Child("type"), p.Type, []string{"Percent", "Pods"}))
		}
		if p.Value <= 0 {
			errs = append(errs, field.Invalid(ip.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > MaxHPAPeriodSeconds {
			errs = append(errs, field.Invalid(ip.Child("periodSeconds"), p.PeriodSeconds,
				fmt.Sprintf("must be less than or equal to %v", MaxHPAPeriodSeconds)))
		}
	}
	return errs
}

func validateHPAStatus(st *autoscalingv2.HorizontalPodAutoscalerStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if st.CurrentReplicas < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("currentReplicas"), st.CurrentReplicas, "must be greater than or equal to 0"))
	}
	if st.DesiredReplicas < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("desiredReplicas"), st.DesiredReplicas, "must be greater than or equal to 0"))
	}
	return errs
}
