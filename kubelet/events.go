package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// maxAggregated bounds the recorder's memory of events it may still count up.
const maxAggregated = 4096

// recorder writes core/v1 Events asynchronously: a pod worker never waits on the API to
// report what it did. A full queue drops events (they are informational) rather than block.
//
// Repeats of an event (same pod, container, type, reason and message) are aggregated as
// upstream's event correlator does: the first is created, later ones raise its count and
// lastTimestamp. A readiness probe failing every second is then one event with a growing
// count (`kubectl describe` shows "x40 over 40s"), not one object per second in etcd.
type recorder struct {
	client kubernetes.Interface
	node   string
	log    *slog.Logger
	ch     chan *v1.Event
	busy   func() bool // pods are being started: hold events back (at most maxEventHold)

	seen map[eventKey]*aggregate // owned by run's goroutine
}

// eventKey identifies events that are repeats of each other.
type eventKey struct {
	namespace, name string
	uid             types.UID
	fieldPath       string
	typ, reason     string
	message         string
}

type aggregate struct {
	name  string // the Event object holding the count
	count int32
}

func keyOf(ev *v1.Event) eventKey {
	o := ev.InvolvedObject
	return eventKey{namespace: o.Namespace, name: o.Name, uid: o.UID, fieldPath: o.FieldPath,
		typ: ev.Type, reason: ev.Reason, message: ev.Message}
}

func newRecorder(c kubernetes.Interface, node string, log *slog.Logger) *recorder {
	return &recorder{client: c, node: node, log: log, ch: make(chan *v1.Event, 1024), seen: map[eventKey]*aggregate{}}
}

// maxEventHold is the oldest an event gets waiting for the node to finish starting pods.
const maxEventHold = 2 * time.Second

func (r *recorder) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.ch:
			// Writing an Event costs the API server and etcd about as much as a pod's status
			// update; while pods are being started on a small node that CPU is theirs. The
			// event's timestamps were taken when it happened, so holding it back a little
			// changes nothing a reader sees but when it appears.
			for r.busy != nil && r.busy() && time.Since(ev.LastTimestamp.Time) < maxEventHold {
				select {
				case <-ctx.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := r.write(cctx, ev); err != nil && ctx.Err() == nil {
				r.log.Debug("write event", "reason", ev.Reason, "pod", ev.InvolvedObject.Name, "err", err)
			}
			cancel()
		}
	}
}

// write creates ev, or counts it on the Event of an earlier identical one. If that Event is
// gone (its TTL ran out, or someone deleted it) a new one is created.
func (r *recorder) write(ctx context.Context, ev *v1.Event) error {
	k := keyOf(ev)
	if a := r.seen[k]; a != nil {
		patch, _ := json.Marshal(map[string]any{"count": a.count + 1, "lastTimestamp": ev.LastTimestamp})
		_, err := r.client.CoreV1().Events(ev.Namespace).Patch(ctx, a.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			a.count++
			return nil
		}
		delete(r.seen, k)
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	created, err := r.client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if len(r.seen) >= maxAggregated {
		clear(r.seen) // forget, rather than grow: a repeat then starts a new Event
	}
	r.seen[k] = &aggregate{name: created.Name, count: created.Count}
	return nil
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

// nodeEvent records reason on the node, as upstream's kubelet does (the node's name as its
// UID, which kubectl describe node also searches by).
func (r *recorder) nodeEvent(typ, reason, format string, args ...any) {
	now := metav1.NewTime(time.Now())
	ev := &v1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", r.node, time.Now().UnixNano()), Namespace: metav1.NamespaceDefault},
		InvolvedObject:      v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: r.node, UID: types.UID(r.node)},
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
