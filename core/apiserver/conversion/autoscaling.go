// Package conversion converts built-in objects between the versions the API server serves
// of one stored resource. Each kind is stored in one version (HorizontalPodAutoscalers in
// autoscaling/v2); a request in another version is converted on the way in and its answers
// on the way out, as upstream converts through its internal types. The rules are upstream's
// (pkg/apis/<group>/<version>/conversion.go), written against the versioned types because
// the internal ones live in k8s.io/kubernetes.
package conversion

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The annotations in which autoscaling/v1 keeps what only autoscaling/v2 can say, so that a
// v1 client's read-modify-write keeps it (upstream's pkg/apis/autoscaling/annotations.go).
const (
	MetricSpecsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	MetricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	ConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	BehaviorSpecsAnnotation  = "autoscaling.alpha.kubernetes.io/behavior"
)

// DefaultCPUUtilization is the target of an autoscaling/v1 HPA that names none: the CPU
// metric at 80% of the pods' requests (upstream's autoscaling.DefaultCPUUtilization).
const DefaultCPUUtilization int32 = 80

var roundTripAnnotations = []string{MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation}

// HPAToV1 is the autoscaling/v1 view of a stored HPA: the CPU utilization metric becomes
// targetCPUUtilizationPercentage, the other metrics, every current metric, the conditions
// and the behavior go to the annotations above. in is not changed (it may be shared by a
// watch cache).
func HPAToV1(in *autoscalingv2.HorizontalPodAutoscaler) (*autoscalingv1.HorizontalPodAutoscaler, error) {
	out := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv1.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	out.Spec = autoscalingv1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	for _, m := range in.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
			if m.Resource.Target.AverageUtilization != nil {
				out.Spec.TargetCPUUtilizationPercentage = ptr(*m.Resource.Target.AverageUtilization)
			}
			break
		}
	}
	out.Status = autoscalingv1.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			out.Status.CurrentCPUUtilizationPercentage = ptr(*m.Resource.Current.AverageUtilization)
		}
	}

	// Annotations a v1 client sent back are the server's to write: drop them first.
	ann := map[string]string{}
	for k, v := range in.Annotations {
		ann[k] = v
	}
	for _, k := range roundTripAnnotations {
		delete(ann, k)
	}
	var other []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil {
			continue
		}
		other = append(other, metricSpecToV1(m))
	}
	if err := setJSON(ann, MetricSpecsAnnotation, len(other) > 0, other); err != nil {
		return nil, err
	}
	current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
	for i, m := range in.Status.CurrentMetrics {
		current[i] = metricStatusToV1(m)
	}
	if err := setJSON(ann, MetricStatusesAnnotation, len(current) > 0, current); err != nil {
		return nil, err
	}
	conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
	for i, c := range in.Status.Conditions {
		conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
			Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
			LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		}
	}
	if err := setJSON(ann, ConditionsAnnotation, len(conds) > 0, conds); err != nil {
		return nil, err
	}
	if err := setJSON(ann, BehaviorSpecsAnnotation, in.Spec.Behavior != nil, in.Spec.Behavior); err != nil {
		return nil, err
	}
	out.Annotations = ann
	if len(ann) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

// HPAFromV1 is the stored (autoscaling/v2) form of an autoscaling/v1 HPA: the annotations of
// HPAToV1 are read back and removed, targetCPUUtilizationPercentage becomes a CPU
// utilization metric (after the annotation's metrics), and an HPA with no metric at all gets
// upstream's implicit CPU target of 80%. A malformed annotation is an error naming it.
func HPAFromV1(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	out := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: in.ObjectMeta}
	out.APIVersion, out.Kind = autoscalingv2.SchemeGroupVersion.String(), "HorizontalPodAutoscaler"
	out.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
		MinReplicas:    in.Spec.MinReplicas,
		MaxReplicas:    in.Spec.MaxReplicas,
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(*in.Spec.TargetCPUUtilizationPercentage)}
	}
	out.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: in.Status.ObservedGeneration,
		LastScaleTime:      in.Status.LastScaleTime,
		CurrentReplicas:    in.Status.CurrentReplicas,
		DesiredReplicas:    in.Status.DesiredReplicas,
	}
	if in.Status.CurrentCPUUtilizationPercentage != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(*in.Status.CurrentCPUUtilizationPercentage)}},
		}}
	}
	var ann map[string]string
	if len(in.Annotations) > 0 {
		ann = make(map[string]string, len(in.Annotations))
		for k, v := range in.Annotations {
			ann[k] = v
		}
	}
	if enc, ok := ann[MetricSpecsAnnotation]; ok {
		var other []autoscalingv1.MetricSpec
		if err := json.Unmarshal([]byte(enc), &other); err != nil {
			return nil, annotationError(MetricSpecsAnnotation, err)
		}
		metrics := make([]autoscalingv2.MetricSpec, 0, len(other)+len(out.Spec.Metrics))
		for _, m := range other {
			metrics = append(metrics, metricSpecFromV1(m))
		}
		out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
		delete(ann, MetricSpecsAnnotation)
	}
	if enc, ok := ann[MetricStatusesAnnotation]; ok {
		var current []autoscalingv1.MetricStatus
		if err := json.Unmarshal([]byte(enc), &current); err != nil {
			return nil, annotationError(MetricStatusesAnnotation, err)
		}
		// The annotation says more than currentCPUUtilizationPercentage: it wins.
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
		for i, m := range current {
			out.Status.CurrentMetrics[i] = metricStatusFromV1(m)
		}
		delete(ann, MetricStatusesAnnotation)
	}
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilization(DefaultCPUUtilization)}
	}
	if enc, ok := ann[ConditionsAnnotation]; ok {
		var conds []autoscalingv1.HorizontalPodAutoscalerCondition
		if err := json.Unmarshal([]byte(enc), &conds); err != nil {
			return nil, annotationError(ConditionsAnnotation, err)
		}
		out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conds))
		for i, c := range conds {
			out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
			}
		}
		delete(ann, ConditionsAnnotation)
	}
	if enc, ok := ann[BehaviorSpecsAnnotation]; ok {
		var b autoscalingv2.HorizontalPodAutoscalerBehavior
		if err := json.Unmarshal([]byte(enc), &b); err != nil {
			return nil, annotationError(BehaviorSpecsAnnotation, err)
		}
		out.Spec.Behavior = &b
		delete(ann, BehaviorSpecsAnnotation)
	}
	out.Annotations = ann
	if len(ann) == 0 {
		out.Annotations = nil
	}
	return out, nil
}

// AnnotationError is a malformed round-trip annotation on an autoscaling/v1 HPA.
type AnnotationError struct {
	Annotation string
	Err        error
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s: %v", e.Annotation, e.Err)
}

func (e *AnnotationError) Unwrap() error { return e.Err }

// FieldError is e as the validation error of metadata.annotations[key], with the value
// found in annotations (the object's).
func (e *AnnotationError) FieldError(annotations map[string]string) *field.Error {
	return field.Invalid(field.NewPath("metadata", "annotations").Key(e.Annotation), annotations[e.Annotation], e.Err.Error())
}

func annotationError(name string, err error) error {
	return &AnnotationError{Annotation: name, Err: err}
}

func setJSON(ann map[string]string, key string, set bool, v any) error {
	if !set {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return annotationError(key, err)
	}
	ann[key] = string(b)
	return nil
}

func cpuUtilization(pct int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(pct)}},
	}
}

func ptr[T any](v T) *T { return &v }

// ---- metric specs and statuses (the annotations' v1 shapes) ----

func metricSpecToV1(m autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector,
			AverageValue: s.Target.AverageValue,
		}
		if s.Target.Value != nil {
			o.TargetValue = *s.Target.Value
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			p.TargetAverageValue = *s.Target.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: s.Name,
			TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: s.Name, Container: s.Container,
			TargetAverageUtilization: s.Target.AverageUtilization, TargetAverageValue: s.Target.AverageValue}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector,
			TargetValue: s.Target.Value, TargetAverageValue: s.Target.AverageValue}
	}
	return out
}

// targetOf is the v2 target of a v1 source's (utilization, average value, value) triple,
// typed the way upstream's conversion types it.
func targetOf(util *int32, avg, value *resource.Quantity, preferValue bool) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{AverageUtilization: util, AverageValue: avg, Value: value}
	switch {
	case util != nil:
		t.Type = autoscalingv2.UtilizationMetricType
	case preferValue && value != nil:
		t.Type = autoscalingv2.ValueMetricType
	default:
		t.Type = autoscalingv2.AverageValueMetricType
	}
	return t
}

func metricSpecFromV1(m autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr(s.TargetValue), AverageValue: s.AverageValue}
		if s.AverageValue != nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Target:          t,
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(s.TargetAverageValue)},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: s.Name, Target: targetOf(s.TargetAverageUtilization, s.TargetAverageValue, nil, false)}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: s.Name, Container: s.Container,
			Target: targetOf(s.TargetAverageUtilization, s.TargetAverageValue, nil, false)}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Target: targetOf(nil, s.TargetAverageValue, s.TargetValue, true),
		}
	}
	return out
}

func metricStatusToV1(m autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		o := &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name, Selector: s.Metric.Selector,
		}
		if s.Current.Value != nil {
			o.CurrentValue = *s.Current.Value
		}
		if s.Current.AverageValue != nil {
			o.AverageValue = ptr(*s.Current.AverageValue)
		}
		out.Object = o
	}
	if s := m.Pods; s != nil {
		p := &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			p.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Pods = p
	}
	if s := m.Resource; s != nil {
		r := &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Resource = r
	}
	if s := m.ContainerResource; s != nil {
		r := &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.ContainerResource = r
	}
	if s := m.External; s != nil {
		e := &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			e.CurrentValue = *s.Current.Value
		}
		out.External = e
	}
	return out
}

func metricStatusFromV1(m autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(m.Type)}
	if s := m.Object; s != nil {
		out.Object = &autoscalingv2.ObjectMetricStatus{
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: ptr(s.CurrentValue), AverageValue: s.AverageValue},
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
		}
	}
	if s := m.Pods; s != nil {
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: ptr(s.CurrentAverageValue)},
		}
	}
	if s := m.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: s.Name,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: s.CurrentAverageUtilization, AverageValue: ptr(s.CurrentAverageValue)}}
	}
	if s := m.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: s.CurrentAverageUtilization, AverageValue: ptr(s.CurrentAverageValue)}}
	}
	if s := m.External; s != nil {
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: ptr(s.CurrentValue), AverageValue: s.CurrentAverageValue},
		}
	}
	return out
}
