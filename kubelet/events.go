package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// recorder writes core/v1 Events asynchronously: a pod worker never waits on the API to
// report what it did. A full queue drops events (they are informational) rather than block.
type recorder struct {
	client kubernetes.Interface
	node   string
	log    *slog.Logger
	ch     chan *v1.Event
}

func newRecorder(c kubernetes.Interface, node string, log *slog.Logger) *recorder {
	return &recorder{client: c, node: node, log: log, ch: make(chan *v1.Event, 1024)}
}

func (r *recorder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.ch:
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if _, err := r.client.CoreV1().Events(ev.Namespace).Create(cctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
				r.log.Debug("write event", "reason", ev.Reason, "pod", ev.InvolvedObject.Name, "err", err)
			}
			cancel()
		}
	}
}

// event records reason on pod; container names the container (empty for the pod itself).
func (r *recorder) event(pod *v1.Pod, typ, reason, container, format string, args ...any) {
	if pod == nil {
		return
	}
	now := metav1.NewTime(time.Now())
	ref := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if container != "" {
		ref.FieldPath = fmt.Sprintf("spec.containers{%s}", container)
	}
	ev := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano()), Namespace: pod.Namespace},
		InvolvedObject:      ref,
		Reason:              reason,
		Message:             fmt.Sprintf(format, args...),
		Source:              v1.EventSource{Component: "kubelet", Host: r.node},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                typ,
		ReportingController: "kubelet",
		ReportingInstance:   r.node,
	}
	select {
	case r.ch <- ev:
	default:
	}
}
