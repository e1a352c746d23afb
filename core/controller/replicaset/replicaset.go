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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "replicaset"

// BurstReplicas caps the pods one reconcile creates or deletes, as upstream's 500: a huge
// scale step is spread over several passes so one ReplicaSet cannot starve the others.
const BurstReplicas = 500

// ControllerUIDIndex indexes pods by the uid of their controller.
const ControllerUIDIndex = "controllerUID"

// Controller is the ReplicaSet controller.
type Controller struct {
	client    kubernetes.Interface
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	podIndex  cache.Indexer
	synced    []cache.InformerSynced
	queue     worker.Queue
	exp       *expectations.Expectations
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller to the factory's ReplicaSet and Pod informers. Start the factory
// after New and before Run.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	rsInf := f.Apps().V1().ReplicaSets()
	podInf := f.Core().V1().Pods()
	if err := AddControllerUIDIndex(podInf.Informer()); err != nil {
		return nil, err
	}
	c := &Controller{
		client:    client,
		rsLister:  rsInf.Lister(),
		podLister: podInf.Lister(),
		podIndex:  podInf.Informer().GetIndexer(),
		synced:    []cache.InformerSynced{rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:     worker.NewQueue(Name),
		exp:       expectations.New(),
		recorder:  recorder,
		log:       log.With("controller", Name),
		now:       time.Now,
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, n any) { c.enqueue(n) },
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				c.exp.Forget(key)
				c.queue.Add(key)
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// AddControllerUIDIndex adds the pod-by-controller-uid index to a pod informer, once.
func AddControllerUIDIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{ControllerUIDIndex: func(obj any) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}})
	if err != nil && inf.HasSynced() {
		return err
	}
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	return err
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("object %T has no metadata", obj)
	}
	return m, nil
}

// Run reconciles ReplicaSets with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// ownerOf returns the key of the ReplicaSet that controls pod, if it exists in the cache.
func (c *Controller) ownerOf(ns string, ref *metav1.OwnerReference) (string, *appsv1.ReplicaSet) {
	if ref == nil || ref.Kind != "ReplicaSet" {
		return "", nil
	}
	rs, err := c.rsLister.ReplicaSets(ns).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return "", nil
	}
	return ns + "/" + rs.Name, rs
}

// enqueueMatching queues every ReplicaSet whose selector matches an orphan pod, so one of
// them adopts it.
func (c *Controller) enqueueMatching(p *corev1.Pod) {
	rss, err := c.rsLister.ReplicaSets(p.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, rs := range rss {
		sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		c.enqueue(rs)
	}
}

func (c *Controller) addPod(obj any) {
	p := obj.(*corev1.Pod)
	if p.DeletionTimestamp != nil {
		c.deletePod(p)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		if key, _ := c.ownerOf(p.Namespace, ref); key != "" {
			c.exp.CreationObserved(key)
			c.queue.Add(key)
		}
		return
	}
	c.enqueueMatching(p)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	old, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if old.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		c.deletePod(cur)
		return
	}
	oldRef, curRef := metav1.GetControllerOfNoCopy(old), metav1.GetControllerOfNoCopy(cur)
	if oldRef != nil && (curRef == nil || oldRef.UID != curRef.UID) {
		if key, _ := c.ownerOf(old.Namespace, oldRef); key != "" {
			c.queue.Add(key)
		}
	}
	if curRef != nil {
		if key, rs := c.ownerOf(cur.Namespace, curRef); key != "" {
			c.queue.Add(key)
			// A pod that just became ready becomes available minReadySeconds later.
			if rs.Spec.MinReadySeconds > 0 && !podstate.IsReady(old) && podstate.IsReady(cur) {
				c.queue.AddAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		}
		return
	}
	if !equality.Semantic.DeepEqual(old.Labels, cur.Labels) || oldRef != nil {
		c.enqueueMatching(cur)
	}
}

func (c *Controller) deletePod(obj any) {
	m, err := metaOf(obj)
	if err != nil {
		return
	}
	ref := metav1.GetControllerOfNoCopy(m)
	if ref == nil {
		return
	}
	if key, _ := c.ownerOf(m.GetNamespace(), ref); key != "" {
		c.exp.DeletionObserved(key, string(m.GetUID()))
		c.queue.Add(key)
	}
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
	seen := map[types.UID]bool{}
	var candidates []*corev1.Pod
	owned, err := c.podIndex.ByIndex(ControllerUIDIndex, string(rs.UID))
	if err != nil {
		return nil, err
	}
	for _, o := range owned {
		p := o.(*corev1.Pod)
		seen[p.UID] = true
		candidates = append(candidates, p)
	}
	matching, err := c.podLister.Pods(rs.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	for _, p := range matching {
		if !seen[p.UID] {
			candidates = append(candidates, p)
		}
	}
	ref := podstate.ControllerRef(rs, "apps/v1", "ReplicaSet")
	return podstate.ClaimAll(ctx, candidates, rs, ref, sel, "pod", func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := c.client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
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
		uids := make([]string, len(victims))
		for i, p := range victims {
			uids[i] = string(p.UID)
		}
		c.exp.ExpectDeletions(key, uids)
		var mu sync.Mutex
		var errs []error
		var wg sync.WaitGroup
		for _, p := range victims {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
				if err != nil {
					c.exp.DeletionObserved(key, string(p.UID))
					if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
						return
					}
					c.recorder.Eventf(rs, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
					mu.Lock()
					errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", p.Namespace, p.Name, err))
					mu.Unlock()
					return
				}
				c.recorder.Eventf(rs, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %s", p.Name)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
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
