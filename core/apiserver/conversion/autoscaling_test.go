package conversion

import (
	"errors"
	"reflect"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

// A v2 HPA with every metric source, current metrics, conditions and a behavior comes back
// unchanged from its v1 view, and the view says in v1 fields what v1 can say.
func TestHPARoundTrip(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"q": "x"}}
	now := metav1.Unix(1700000000, 0)
	in := &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: metav1.ObjectMeta{Name: "h", Namespace: "ns", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr(int32(2)), MaxReplicas: 9,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "rps", Selector: sel},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("10")}}},
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "s"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "hits"},
					Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q("5")}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("3")}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
					Name: corev1.ResourceMemory, Container: "app",
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(70))}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr(int32(60))}}},
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr(int32(30))}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 4, LastScaleTime: &now,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
					Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr(int32(90)), AverageValue: q("90m")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "rps"},
					Current: autoscalingv2.MetricValueStatus{AverageValue: q("12")}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale", LastTransitionTime: now}},
		},
	}
	orig := in.DeepCopy()
	v1, err := HPAToV1(in)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("HPAToV1 changed its input")
	}
	if *v1.Spec.TargetCPUUtilizationPercentage != 60 || *v1.Status.CurrentCPUUtilizationPercentage != 90 || v1.Annotations["team"] != "a" {
		t.Errorf("v1 fields: %+v %+v %v", v1.Spec, v1.Status, v1.Annotations)
	}
	for _, a := range roundTripAnnotations {
		if v1.Annotations[a] == "" {
			t.Errorf("v1 view lacks %s", a)
		}
	}
	back, err := HPAFromV1(v1)
	if err != nil {
		t.Fatal(err)
	}
	// The CPU metric goes last, after the annotation's metrics, as upstream orders them.
	if !reflect.DeepEqual(normalize(back), normalize(orig)) {
		t.Errorf("round trip differs:\n got %+v\nwant %+v", back, orig)
	}
}

// normalize re-parses quantities so that DeepEqual compares values, not cached strings.
func normalize(h *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	h = h.DeepCopy()
	fix := func(p *resource.Quantity) {
		if p != nil {
			*p = resource.MustParse(p.String())
		}
	}
	for _, m := range h.Spec.Metrics {
		for _, t := range []*autoscalingv2.MetricTarget{target(m)} {
			if t != nil {
				fix(t.Value)
				fix(t.AverageValue)
			}
		}
	}
	for _, m := range h.Status.CurrentMetrics {
		if m.Resource != nil {
			fix(m.Resource.Current.AverageValue)
		}
		if m.Pods != nil {
			fix(m.Pods.Current.AverageValue)
		}
	}
	for i := range h.Status.Conditions {
		h.Status.Conditions[i].LastTransitionTime = metav1.NewTime(h.Status.Conditions[i].LastTransitionTime.UTC())
	}
	lst := metav1.NewTime(h.Status.LastScaleTime.UTC())
	h.Status.LastScaleTime = &lst
	return h
}

func target(m autoscalingv2.MetricSpec) *autoscalingv2.MetricTarget {
	switch {
	case m.Pods != nil:
		return &m.Pods.Target
	case m.Object != nil:
		return &m.Object.Target
	case m.External != nil:
		return &m.External.Target
	case m.ContainerResource != nil:
		return &m.ContainerResource.Target
	case m.Resource != nil:
		return &m.Resource.Target
	}
	return nil
}

func TestHPAFromV1(t *testing.T) {
	// No target at all: upstream's implicit 80% CPU.
	out, err := HPAFromV1(&autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Spec.Metrics) != 1 || out.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU || *out.Spec.Metrics[0].Resource.Target.AverageUtilization != DefaultCPUUtilization ||
		out.Spec.Metrics[0].Resource.Target.Type != autoscalingv2.UtilizationMetricType {
		t.Errorf("default metric: %+v", out.Spec.Metrics)
	}
	// A malformed annotation is an error naming it.
	_, err = HPAFromV1(&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{BehaviorSpecsAnnotation: "{"}}})
	var ae *AnnotationError
	if !errors.As(err, &ae) || ae.Annotation != BehaviorSpecsAnnotation {
		t.Errorf("malformed behavior annotation: %v", err)
	}
}
