package printers

import (
	"fmt"
	"strings"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/conversion"
)

// Upstream's HorizontalPodAutoscaler columns (pkg/printers/internalversion).
var hpaColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
	{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
	{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
	{Name: "MaxPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
	{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
	ageColumn,
}

func printHPA(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, nil, false
	}
	ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
	minPods := "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = fmt.Sprint(*h.Spec.MinReplicas)
	}
	return []any{h.Name, ref, hpaTargets(h), minPods, fmt.Sprint(h.Spec.MaxReplicas), fmt.Sprint(h.Status.CurrentReplicas), age(h.CreationTimestamp, now)}, nil, true
}

// hpaTargets is "cpu: 200%/50%" per Resource metric, <unknown> for a current value not yet
// measured, as kubectl shows.
func hpaTargets(h *autoscalingv2.HorizontalPodAutoscaler) string {
	if len(h.Spec.Metrics) == 0 {
		return "<none>"
	}
	var parts []string
	for i, m := range h.Spec.Metrics {
		if m.Type != autoscalingv2.ResourceMetricSourceType || m.Resource == nil {
			parts = append(parts, "<unknown>/<unknown>")
			continue
		}
		var cur *autoscalingv2.MetricValueStatus
		if i < len(h.Status.CurrentMetrics) && h.Status.CurrentMetrics[i].Resource != nil {
			cur = &h.Status.CurrentMetrics[i].Resource.Current
		}
		t := m.Resource.Target
		current := "<unknown>"
		switch {
		case t.AverageUtilization != nil:
			if cur != nil && cur.AverageUtilization != nil {
				current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
			}
			parts = append(parts, fmt.Sprintf("%s: %s/%d%%", m.Resource.Name, current, *t.AverageUtilization))
		case t.AverageValue != nil:
			if cur != nil && cur.AverageValue != nil {
				current = cur.AverageValue.String()
			}
			parts = append(parts, fmt.Sprintf("%s: %s/%s", m.Resource.Name, current, t.AverageValue.String()))
		default:
			parts = append(parts, "<unknown>/<unknown>")
		}
	}
	return strings.Join(parts, ", ")
}

// printHPAV1 prints an autoscaling/v1 HPA as the v2 object it is stored as, so that both
// versions show the same TARGETS (v1 keeps the other metrics in annotations).
func printHPAV1(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	h, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler)
	if !ok {
		return nil, nil, false
	}
	v2, err := conversion.HPAFromV1(h)
	if err != nil {
		return nil, nil, false
	}
	return printHPA(v2, now)
}

func init() {
	register(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), hpaColumns, printHPA)
	register(autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), hpaColumns, printHPAV1)
}
