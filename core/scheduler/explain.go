package scheduler

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// PodExplanation returns the JSON of the scheduler's last explanation for pod (a
// runtime.Explanation), or "" when there is none. A bound pod carries it in its
// annotation ExplainAnnotation (it came with the Binding); an unschedulable pod's is on
// the newest of its FailedScheduling Events that carries the annotation. Neither is a
// write of the pod by the scheduler, so users' admission policies on pods never judge it.
func PodExplanation(ctx context.Context, client kubernetes.Interface, pod *v1.Pod) (string, error) {
	if raw, ok := pod.Annotations[ExplainAnnotation]; ok {
		return raw, nil
	}
	list, err := client.CoreV1().Events(pod.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod.Name}.String()})
	if err != nil {
		return "", fmt.Errorf("events of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var best *v1.Event
	for i := range list.Items {
		e := &list.Items[i]
		if e.Reason != "FailedScheduling" || e.InvolvedObject.UID != pod.UID || e.Annotations[ExplainAnnotation] == "" {
			continue
		}
		if best == nil || eventTime(e).After(eventTime(best)) {
			best = e
		}
	}
	if best == nil {
		return "", nil
	}
	return best.Annotations[ExplainAnnotation], nil
}

func eventTime(e *v1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
