package validation

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validHPA() *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 5,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To(int32(60)),
				Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 15}}}},
		},
	}
}

// HorizontalPodAutoscaler errors carry upstream's field paths and messages; a valid one
// (and one with only scaleTargetRef and maxReplicas, as kubectl autoscale makes) has none.
func TestHorizontalPodAutoscaler(t *testing.T) {
	checkErrors(t, Validate(validHPA()), nil)
	bare := validHPA()
	bare.Spec.MinReplicas, bare.Spec.Metrics, bare.Spec.Behavior = nil, nil, nil
	checkErrors(t, Validate(bare), nil)
	for _, tc := range []struct {
		name   string
		mutate func(h *autoscalingv2.HorizontalPodAutoscaler)
		wants  []want
	}{
		{"replicas", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To(int32(0))
			h.Spec.MaxReplicas = 0
		}, []want{
			{field.ErrorTypeInvalid, "spec.minReplicas", "must be greater than or equal to 1"},
			{field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than 0"}}},
		{"max below min", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To(int32(4))
			h.Spec.MaxReplicas = 2
		}, []want{
			{field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than or equal to `minReplicas`"}}},
		{"target", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{APIVersion: "a/b/c", Name: "we/b"}
		}, []want{
			{field.ErrorTypeRequired, "spec.scaleTargetRef.kind", ""},
			{field.ErrorTypeInvalid, "spec.scaleTargetRef.name", "may not contain '/'"},
			{field.ErrorTypeInvalid, "spec.scaleTargetRef.apiVersion", "unexpected GroupVersion string"}}},
		{"metric type", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Type = "" }, []want{
			{field.ErrorTypeRequired, "spec.metrics[0].type", "must specify a metric source type"},
			{field.ErrorTypeForbidden, "spec.metrics[0].resource", "must populate the given metric source only"}}},
		{"metric source of another type", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.Metrics[0].Type = "Queue" }, []want{
			{field.ErrorTypeNotSupported, "spec.metrics[0].type", ""},
			{field.ErrorTypeForbidden, "spec.metrics[0].resource", "must populate the given metric source only"}}},
		{"metric source missing", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = append(h.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType})
		}, []want{{field.ErrorTypeRequired, "spec.metrics[1].pods", "must populate information for the given metric source"}}},
		{"resource target", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource = &autoscalingv2.ResourceMetricSource{Target: autoscalingv2.MetricTarget{Type: "Percent", AverageUtilization: ptr.To(int32(0)),
				AverageValue: ptr.To(resource.MustParse("-1"))}}
		}, []want{
			{field.ErrorTypeRequired, "spec.metrics[0].resource.name", "must specify a resource name"},
			{field.ErrorTypeInvalid, "spec.metrics[0].resource.target.type", "must be either Utilization, Value, or AverageValue"},
			{field.ErrorTypeInvalid, "spec.metrics[0].resource.target.averageUtilization", "must be greater than 0"},
			{field.ErrorTypeInvalid, "spec.metrics[0].resource.target.averageValue", "must be positive"},
			{field.ErrorTypeInvalid, "spec.metrics[0].resource.target.averageValue", "may not set both a target raw value and a target utilization"}}},
		{"resource target empty", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Resource.Target = autoscalingv2.MetricTarget{}
		}, []want{
			{field.ErrorTypeRequired, "spec.metrics[0].resource.target.type", "must specify a metric target type"},
			{field.ErrorTypeRequired, "spec.metrics[0].resource.target.averageUtilization", "must set either a target raw value or a target utilization"}}},
		{"pods and external", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("1")), AverageValue: ptr.To(resource.MustParse("2"))}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{Name: corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))}}},
			}
		}, []want{
			{field.ErrorTypeRequired, "spec.metrics[0].pods.metric.name", "must specify a metric name"},
			{field.ErrorTypeRequired, "spec.metrics[0].pods.target.averageValue", "must specify a positive target averageValue"},
			{field.ErrorTypeInvalid, "spec.metrics[1].external.target.value", "may not set both a target value for metric and a per-pod target"},
			{field.ErrorTypeRequired, "spec.metrics[2].containerResource.container", "must specify a container"}}},
		{"behavior", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(-1)), SelectPolicy: ptr.To(autoscalingv2.ScalingPolicySelect("Avg"))}
			h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = ptr.To(int32(3601))
			h.Spec.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 1801}}
		}, []want{
			{field.ErrorTypeInvalid, "spec.behavior.scaleUp.stabilizationWindowSeconds", "must be greater than or equal to zero"},
			{field.ErrorTypeNotSupported, "spec.behavior.scaleUp.selectPolicy", ""},
			{field.ErrorTypeInvalid, "spec.behavior.scaleDown.stabilizationWindowSeconds", "must be less than or equal to 3600"},
			{field.ErrorTypeNotSupported, "spec.behavior.scaleDown.policies[0].type", ""},
			{field.ErrorTypeInvalid, "spec.behavior.scaleDown.policies[0].value", "must be greater than zero"},
			{field.ErrorTypeInvalid, "spec.behavior.scaleDown.policies[0].periodSeconds", "must be less than or equal to 1800"}}},
		{"name", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Name = "Web_1" }, []want{
			{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 subdomain"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := validHPA()
			tc.mutate(h)
			checkErrors(t, Validate(h), tc.wants)
		})
	}

	// Updates: the spec rules again, the status counts, immutable metadata.
	old := validHPA()
	old.ResourceVersion, old.UID = "5", "u1"
	upd := old.DeepCopy()
	upd.Status.DesiredReplicas, upd.Status.CurrentReplicas = 3, 2
	checkErrors(t, ValidateUpdate(upd, old), nil)
	upd.Spec.MaxReplicas = 0
	upd.Status.DesiredReplicas = -1
	upd.Name = "other"
	checkErrors(t, ValidateUpdate(upd, old), []want{
		{field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than 0"},
		{field.ErrorTypeInvalid, "spec.maxReplicas", "must be greater than or equal to `minReplicas`"},
		{field.ErrorTypeInvalid, "status.desiredReplicas", "must be greater than or equal to 0"},
		{field.ErrorTypeInvalid, "metadata.name", "field is immutable"}})
}

// An autoscaling/v1 HPA is validated as the v2 object it is stored as, with the paths a v1
// client wrote: a malformed round-trip annotation is reported as that annotation, and a
// bad targetCPUUtilizationPercentage as that field.
func TestHorizontalPodAutoscalerV1Paths(t *testing.T) {
	v1 := func() *autoscalingv1.HorizontalPodAutoscaler {
		return &autoscalingv1.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To(int32(1)), MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To(int32(50)),
			},
		}
	}
	checkErrors(t, Validate(v1()), nil)

	bad := v1()
	bad.Annotations = map[string]string{"autoscaling.alpha.kubernetes.io/metrics": "not json"}
	errs := Validate(bad)
	checkErrors(t, errs, []want{{field.ErrorTypeInvalid, "metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]", ""}})
	if errs[0].BadValue != "not json" {
		t.Errorf("annotation error's value %v, want the annotation's", errs[0].BadValue)
	}

	cpu := v1()
	cpu.Spec.TargetCPUUtilizationPercentage = ptr.To(int32(0))
	checkErrors(t, Validate(cpu), []want{{field.ErrorTypeInvalid, "spec.targetCPUUtilizationPercentage", ""}})
}
