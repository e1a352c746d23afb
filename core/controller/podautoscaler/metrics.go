package podautoscaler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
)

// ResourceMetrics reads pod usage from the resource metrics API (metrics.k8s.io/v1beta1
// PodMetrics) through k8s.io/metrics' typed client, as upstream's REST metrics client does.
type ResourceMetrics struct {
	Client metricsclient.Interface
}

// PodUsage implements Metrics: each pod's usage is the sum of its containers'.
func (m ResourceMetrics) PodUsage(ctx context.Context, ns string, selector labels.Selector, res corev1.ResourceName) (PodUsage, error) {
	list, err := m.Client.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := PodUsage{}
	for _, pm := range list.Items {
		var sum int64
		ok := len(pm.Containers) > 0
		for _, c := range pm.Containers {
			q, has := c.Usage[res]
			if !has {
				ok = false
				break
			}
			sum += q.MilliValue()
		}
		if ok {
			out[pm.Name] = sum
		}
	}
	return out, nil
}

// milliQuantity is a usage in milli-units as a quantity (cores as "250m", bytes as "64Mi").
func milliQuantity(milli int64, res corev1.ResourceName) resource.Quantity {
	if res == corev1.ResourceCPU {
		return *resource.NewMilliQuantity(milli, resource.DecimalSI)
	}
	return *resource.NewQuantity(milli/1000, resource.BinarySI)
}
