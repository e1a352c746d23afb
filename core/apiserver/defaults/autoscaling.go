package defaults

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// autoscaling sets the defaults of HorizontalPodAutoscalers (upstream's
// pkg/apis/autoscaling/v1 and v2 defaults.go) and reports whether obj was one.
func autoscaling(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *autoscalingv2.HorizontalPodAutoscaler:
		hpaV2(o)
	case *autoscalingv1.HorizontalPodAutoscaler:
		// v1's only default; the CPU target of an HPA without one is its conversion's
		// (core/apiserver/conversion), as upstream.
		if o.Spec.MinReplicas == nil {
			o.Spec.MinReplicas = ptr.To(int32(1))
		}
	default:
		return false
	}
	return true
}

// HPADefaultCPUUtilization is the CPU target of an HPA that names no metric.
const HPADefaultCPUUtilization int32 = 80

// hpaV2: minReplicas 1, a CPU utilization target of 80% when no metric is named, and a
// behavior that names scaleUp or scaleDown rules filled in with the default rules
// (scale up by at most 4 pods or 100% per 15 s, no stabilization; scale down by at most
// 100% per 15 s, the stabilization window left to the controller's flag).
func hpaV2(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr.To(int32(1))
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(HPADefaultCPUUtilization)}},
		}}
	}
	if b := h.Spec.Behavior; b != nil {
		b.ScaleUp = hpaRules(b.ScaleUp, HPAScaleUpRules())
		b.ScaleDown = hpaRules(b.ScaleDown, HPAScaleDownRules())
	}
}

// HPAScaleUpRules are upstream's default scale-up rules (GenerateHPAScaleUpRules(nil)).
func HPAScaleUpRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To(int32(0)),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	}
}

// HPAScaleDownRules are upstream's default scale-down rules (GenerateHPAScaleDownRules(nil)):
// no stabilization window, which the controller's --horizontal-pod-autoscaler-downscale-
// stabilization (5 minutes) stands for.
func HPAScaleDownRules() *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
	}
}

// hpaRules fills the unset fields of from with def's.
func hpaRules(from, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if from == nil {
		return def
	}
	if from.SelectPolicy != nil {
		def.SelectPolicy = from.SelectPolicy
	}
	if from.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = from.StabilizationWindowSeconds
	}
	if from.Policies != nil {
		def.Policies = from.Policies
	}
	if from.Tolerance != nil {
		def.Tolerance = from.Tolerance
	}
	return def
}
