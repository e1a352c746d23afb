// Package replicaset keeps spec.replicas pods running for every ReplicaSet: it creates
// missing pods (with a controller ownerReference), deletes extras in podstate.ForDeletion
// order, adopts matching orphans and releases pods that stopped matching, and reports
// replicas, readyReplicas and availableReplicas in status.
package replicaset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/podcontrol"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "replicaset"

// BurstReplicas caps the pods one reconcile creates or deletes, as upstream's 500: a huge
// scale step is spread over several passes so one ReplicaSet cannot starve the others.
const BurstReplicas = 500

// Controller is the ReplicaSet controller.
type Controller struct {
	client   kubernetes.Interface
	rsLister appslisters.ReplicaSetLister
	pods     *podcontrol.Pods
	synced   []cache.InformerSynced
	queue    worker.Queue
	exp      *expectations.Expectations
	recorder record.EventRecorder
	log      *slog.Logger
	now      func() time.Time
}

// New wires the controller to the factory's ReplicaSet and Pod informers. Start the factory
// after New and before Run.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	rsInf := f.Apps().V1().ReplicaSets()
	pods, err := podcontrol.NewPods(client, f.Core().V1().Pods())
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client:   client,
		rsLister: rsInf.Lister(),
		pods:     pods,
		synced:   []cache.InformerSynced{rsInf.Informer().HasSynced, pods.Synced},
		queue:    worker.NewQueue(Name),
		exp:      expectations.New(),
		recorder: recorder,
		log:      log.With("controller", Name),
		now:      time.Now,
	}
	if _, err := rsInf.Informer().AddEventHandler(podcontrol.OwnerHandler(c.queue, c.exp, nil)); err != nil {
		return nil, err
	}
	events := &podcontrol.Events[*appsv1.ReplicaSet]{
		Kind: "ReplicaSet", Queue: c.queue, Expectations: c.exp,
		Get: func(ns, name string) (*appsv1.ReplicaSet, error) { return c.rsLister.ReplicaSets(ns).Get(name) },
		List: func(ns string) ([]*appsv1.ReplicaSet, error) {
			return c.rsLister.ReplicaSets(ns).List(labels.Everything())
		},
		Selector: func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector },
		Updated: func(key string, rs *appsv1.ReplicaSet, old, cur metav1.Object) {
			// A pod that just became ready becomes available minReadySeconds later.
			o, n := old.(*corev1.Pod), cur.(*corev1.Pod)
			if rs.Spec.MinReadySeconds > 0 && !podstate.IsReady(o) && podstate.IsReady(n) {
				c.queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		},
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(events.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles ReplicaSets with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

// sync reconciles one ReplicaSet.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "InvalidSelector", "spec.selector is invalid or empty: %v", err)
		return nil
	}
	needsSync := c.exp.Satisfied(key)
	pods, err := c.claimPods(ctx, rs, sel)
	if err != nil {
		return err
	}
	var active []*corev1.Pod
	for _, p := range pods {
		if podstate.IsActive(p) {
			active = append(active, p)
		}
	}
	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manage(ctx, key, rs, active)
	}
	now := c.now()
	status := CalculateStatus(rs, pods, manageErr, now)
	if err := c.updateStatus(ctx, rs, status); err != nil {
		return err
	}
	if manageErr != nil {
		return manageErr
	}
	if wait := nextAvailable(rs, active, now); wait > 0 {
		return worker.RequeueAfter(wait)
	}
	return nil
}

// claimPods returns the pods rs controls after adopting matching orphans and releasing
// owned pods that no longer match.
func (c *Controller) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, sel labels.Selector) ([]*corev1.Pod, error) {
	return c.pods.Claim(ctx, rs, podstate.ControllerRef(rs, "apps/v1", "ReplicaSet"), sel, nil)
}

// Diff is the number of pods to create (positive) or delete (negative), capped at
// BurstReplicas either way.
func Diff(desired int32, active int) int {
	d := int(desired) - active
	if d > BurstReplicas {
		return BurstReplicas
	}
	if d < -BurstReplicas {
		return -BurstReplicas
	}
	return d
}

func (c *Controller) manage(ctx context.Context, key string, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	desired := int32(1)
	if rs.Spec.Replicas != nil {
		desired = *rs.Spec.Replicas
	}
	diff := Diff(desired, len(active))
	switch {
	case diff > 0:
		c.exp.ExpectCreations(key, diff)
		created, err := SlowStart(diff, 1, func() error { return c.createPod(ctx, rs) })
		// Give back the expectations of creations that failed or were never attempted: no
		// watch event will ever come for them.
		for range diff - created {
			c.exp.CreationObserved(key)
		}
		return err
	case diff < 0:
		victims := podstate.ForDeletion(active, -diff)
		return errors.Join(podcontrol.DeletePods(ctx, c.client, c.recorder, c.exp, key, rs, victims)...)
	}
	return nil
}

// PodFromTemplate is the pod rs creates: the template's metadata and spec, a generated
// name prefixed by the ReplicaSet's, and rs as controller.
func PodFromTemplate(rs *appsv1.ReplicaSet) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    rs.Name + "-",
			Namespace:       rs.Namespace,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{podstate.ControllerRef(rs, "apps/v1", "ReplicaSet")},
		},
		Spec: t.Spec,
	}
}

func (c *Controller) createPod(ctx context.Context, rs *appsv1.ReplicaSet) error {
	p, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, PodFromTemplate(rs), metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err
		}
		c.recorder.Eventf(rs, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return fmt.Errorf("create pod for replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	c.recorder.Eventf(rs, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", p.Name)
	return nil
}

// SlowStart calls fn count times in parallel batches of initial, 2*initial, 4*initial ...
// and stops after the first batch with a failure, so a create that is going to fail (quota,
// admission) fails once or twice instead of count times. It returns how many calls succeeded.
func SlowStart(count, initial int, fn func() error) (int, error) {
	done := 0
	for batch := min(count, initial); batch > 0; batch = min(2*batch, count-done) {
		var wg sync.WaitGroup
		errCh := make(chan error, batch)
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errCh <- err
				}
			}()
		}
		wg.Wait()
		close(errCh)
		var errs []error
		for err := range errCh {
			errs = append(errs, err)
		}
		done += batch - len(errs)
		if len(errs) > 0 {
			return done, errors.Join(errs...)
		}
	}
	return done, nil
}

// CalculateStatus is rs's status for the pods it controls (active or not).
func CalculateStatus(rs *appsv1.ReplicaSet, pods []*corev1.Pod, manageErr error, now time.Time) appsv1.ReplicaSetStatus {
	st := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	var replicas, labeled, ready, available, terminating int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			terminating++
		}
		if !podstate.IsActive(p) {
			continue
		}
		replicas++
		if templateLabels.Matches(labels.Set(p.Labels)) {
			labeled++
		}
		if podstate.IsReady(p) {
			ready++
			if podstate.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = replicas, labeled, ready, available
	st.TerminatingReplicas = &terminating
	st.ObservedGeneration = rs.Generation
	cond := -1
	for i, c := range st.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			cond = i
		}
	}
	switch {
	case manageErr != nil && cond < 0:
		reason := "FailedCreate"
		if replicas > desiredOf(rs) {
			reason = "FailedDelete"
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && cond >= 0:
		st.Conditions = append(st.Conditions[:cond:cond], st.Conditions[cond+1:]...)
	}
	return st
}

func desiredOf(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// nextAvailable returns when the next ready-but-not-yet-available pod becomes available.
func nextAvailable(rs *appsv1.ReplicaSet, active []*corev1.Pod, now time.Time) time.Duration {
	var next time.Duration
	for _, p := range active {
		if d := podstate.AvailableIn(p, rs.Spec.MinReadySeconds, now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	if next > 0 {
		next += 100 * time.Millisecond
	}
	return next
}

func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) error {
	if equality.Semantic.DeepEqual(rs.Status, st) {
		return nil
	}
	cp := rs.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().ReplicaSets(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	// A conflict means a newer ReplicaSet exists (its spec or status moved on); its watch
	// event queues the key again and the next pass computes the status afresh, so this is
	// not a failure to back off from.
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("update status of replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
}
