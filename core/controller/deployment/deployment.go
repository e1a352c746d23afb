// Package deployment rolls Deployments out through ReplicaSets, as upstream: one
// ReplicaSet per pod template (named by its pod-template-hash), RollingUpdate within
// maxSurge/maxUnavailable or Recreate, revision annotations and history cleanup, pause and
// resume, proportional scaling during a rollout, and the Progressing and Available
// conditions that `kubectl rollout status` reads. The arithmetic lives in pure functions
// (rollout.go, status.go); this file does the I/O.
package deployment

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
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
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/podcontrol"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "deployment"

// Controller is the Deployment controller.
type Controller struct {
	client   kubernetes.Interface
	dLister  appslisters.DeploymentLister
	rsLister appslisters.ReplicaSetLister
	podIndex cache.Indexer
	synced   []cache.InformerSynced
	queue    worker.Queue
	recorder record.EventRecorder
	log      *slog.Logger
	now      func() time.Time
}

// New wires the controller to the factory's Deployment, ReplicaSet and Pod informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	dInf, rsInf, podInf := f.Apps().V1().Deployments(), f.Apps().V1().ReplicaSets(), f.Core().V1().Pods()
	if err := podcontrol.AddControllerUIDIndex(podInf.Informer()); err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, dLister: dInf.Lister(), rsLister: rsInf.Lister(),
		podIndex: podInf.Informer().GetIndexer(),
		synced:   []cache.InformerSynced{dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced},
		queue:    worker.NewQueue(Name),
		recorder: recorder, log: log.With("controller", Name), now: time.Now,
	}
	if _, err := dInf.Informer().AddEventHandler(worker.EnqueueAll(c.queue)); err != nil {
		return nil, err
	}
	if _, err := rsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.rsChanged,
		UpdateFunc: func(o, n any) {
			old, cur := o.(*appsv1.ReplicaSet), n.(*appsv1.ReplicaSet)
			if ref := metav1.GetControllerOfNoCopy(old); ref != nil {
				if ncur := metav1.GetControllerOfNoCopy(cur); ncur == nil || ncur.UID != ref.UID {
					c.rsChanged(old)
				}
			}
			c.rsChanged(cur)
		},
		DeleteFunc: c.rsChanged,
	}); err != nil {
		return nil, err
	}
	// Recreate waits for the old pods to be gone: their deletions must wake it up.
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			p, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "ReplicaSet" {
				if rs, err := c.rsLister.ReplicaSets(p.Namespace).Get(ref.Name); err == nil && rs.UID == ref.UID {
					c.rsChanged(rs)
				}
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// rsChanged queues the Deployment that controls rs, or every Deployment that could adopt it.
func (c *Controller) rsChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if ref.Kind != "Deployment" {
			return
		}
		if d, err := c.dLister.Deployments(rs.Namespace).Get(ref.Name); err == nil && d.UID == ref.UID {
			c.queue.Add(rs.Namespace + "/" + d.Name)
		}
		return
	}
	ds, _ := c.dLister.Deployments(rs.Namespace).List(labels.Everything())
	for _, d := range ds {
		if sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && !sel.Empty() && sel.Matches(labels.Set(rs.Labels)) {
			c.queue.Add(rs.Namespace + "/" + d.Name)
		}
	}
}

// Run reconciles Deployments with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	cached, err := c.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required.")
		return nil
	}
	rsList, err := c.claimReplicaSets(ctx, d, sel)
	if err != nil {
		return err
	}
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if err := c.checkPaused(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.syncScaled(ctx, d, rsList)
	}
	if scaling, err := c.isScalingEvent(d, rsList); err != nil {
		return err
	} else if scaling {
		return c.syncScaled(ctx, d, rsList)
	}
	if isRolling(d) {
		return c.rolloutRolling(ctx, d, rsList)
	}
	return c.rolloutRecreate(ctx, d, rsList)
}

// claimReplicaSets returns the ReplicaSets d controls, adopting and releasing as needed.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := c.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	ref := podstate.ControllerRef(d, "apps/v1", "Deployment")
	return podstate.ClaimAll(ctx, all, d, ref, sel, "replicaset", func(ctx context.Context, ns, name string, patch []byte) error {
		_, err := c.client.AppsV1().ReplicaSets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// findNewRS returns the ReplicaSet made from d's current template: equal apart from the
// hash label, or carrying the hash of the current template (which tolerates an API server
// that defaults ReplicaSet templates differently from Deployment templates). The oldest
// wins if several match.
func findNewRS(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet) {
	sorted := append([]*appsv1.ReplicaSet(nil), rsList...)
	byCreation(sorted)
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	var newRS *appsv1.ReplicaSet
	var old []*appsv1.ReplicaSet
	for _, rs := range sorted {
		if newRS == nil && (EqualIgnoreHash(&rs.Spec.Template, &d.Spec.Template) || rs.Labels[PodTemplateHashLabel] == hash && rs.Name == d.Name+"-"+hash) {
			newRS = rs
			continue
		}
		old = append(old, rs)
	}
	return newRS, old
}

// newAndOld finds the new ReplicaSet (creating it if create), brings its revision and
// annotations up to date, and returns it with the old ones.
func (c *Controller) newAndOld(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	newRS, old := findNewRS(d, rsList)
	revision := maxRevision(old) + 1
	if newRS != nil {
		cp := newRS.DeepCopy()
		changed := syncRSAnnotations(d, cp, revision)
		if cp.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			cp.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			changed = true
		}
		if changed {
			updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("update revision of replicaset %s/%s: %w", cp.Namespace, cp.Name, err)
			}
			newRS = updated
		}
		if err := c.setDeploymentRevision(ctx, d, newRS.Annotations[RevisionAnnotation]); err != nil {
			return nil, nil, err
		}
		return newRS, old, nil
	}
	if !create {
		return nil, old, nil
	}
	hash := ComputeHash(&d.Spec.Template, d.Status.CollisionCount)
	tmpl := d.Spec.Template.DeepCopy()
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	tmpl.Labels[PodTemplateHashLabel] = hash
	sel := d.Spec.Selector.DeepCopy()
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[PodTemplateHashLabel] = hash
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: tmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{podstate.ControllerRef(d, "apps/v1", "Deployment")},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: &zero, MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: *tmpl},
	}
	size := NewRSNewReplicas(d, old, rs)
	rs.Spec.Replicas = &size
	syncRSAnnotations(d, rs, revision)
	setReplicasAnnotations(rs, desired(d), desired(d)+MaxSurge(d))
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := c.client.AppsV1().ReplicaSets(d.Namespace).Get(ctx, rs.Name, metav1.GetOptions{})
		if gerr != nil {
			return nil, nil, gerr
		}
		if ref := metav1.GetControllerOfNoCopy(existing); ref != nil && ref.UID == d.UID && EqualIgnoreHash(&existing.Spec.Template, &d.Spec.Template) {
			return nil, nil, fmt.Errorf("replicaset %s/%s exists but is not yet in the cache", d.Namespace, rs.Name)
		}
		// A different template hashed to the same name: bump collisionCount so the next
		// pass picks another name.
		cnt := int32(0)
		if d.Status.CollisionCount != nil {
			cnt = *d.Status.CollisionCount
		}
		cnt++
		d.Status.CollisionCount = &cnt
		if _, uerr := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{}); uerr != nil {
			return nil, nil, uerr
		}
		return nil, nil, fmt.Errorf("replicaset name %s/%s collides with another template; retrying with collisionCount %d", d.Namespace, rs.Name, cnt)
	}
	if err != nil {
		c.recorder.Eventf(d, corev1.EventTypeWarning, "FailedCreate", "Failed to create new replica set %q: %v", rs.Name, err)
		return nil, nil, fmt.Errorf("create replicaset %s/%s: %w", d.Namespace, rs.Name, err)
	}
	if size > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, size)
	}
	if hasProgressDeadline(d) {
		SetCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, ReasonNewRSCreated,
			fmt.Sprintf("Created new replica set %q", created.Name), c.now()))
		updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
		}
		d.Status, d.ResourceVersion = updated.Status, updated.ResourceVersion
	}
	if err := c.setDeploymentRevision(ctx, d, created.Annotations[RevisionAnnotation]); err != nil {
		return nil, nil, err
	}
	return created, old, nil
}

func (c *Controller) setDeploymentRevision(ctx context.Context, d *appsv1.Deployment, rev string) error {
	if rev == "" || d.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, RevisionAnnotation, rev)
	updated, err := c.client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("set revision of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	d.Annotations[RevisionAnnotation] = rev
	d.ResourceVersion = updated.ResourceVersion
	return nil
}

// scaleRS sets rs's size (and its desired/max annotations) and records ScalingReplicaSet.
func (c *Controller) scaleRS(ctx context.Context, rs *appsv1.ReplicaSet, size int32, d *appsv1.Deployment) (*appsv1.ReplicaSet, error) {
	cp := rs.DeepCopy()
	old := replicas(cp.Spec.Replicas)
	annChanged := setReplicasAnnotations(cp, desired(d), desired(d)+MaxSurge(d))
	if old == size && !annChanged {
		return rs, nil
	}
	cp.Spec.Replicas = &size
	updated, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("scale replicaset %s/%s to %d: %w", cp.Namespace, cp.Name, size, err)
	}
	if old != size {
		dir := "up"
		if size < old {
			dir = "down"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, rs.Name, old, size)
	}
	return updated, nil
}

func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rsList, true)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)

	// Grow the new ReplicaSet as far as the surge allows.
	if cur := replicas(newRS.Spec.Replicas); cur != desired(d) {
		target := desired(d)
		if cur < desired(d) {
			target = NewRSNewReplicas(d, all, newRS)
		}
		if target != cur {
			if _, err := c.scaleRS(ctx, newRS, target, d); err != nil {
				return err
			}
			return c.syncRolloutStatus(ctx, d, all, newRS)
		}
	}
	// Shrink old ReplicaSets as far as availability allows.
	if scaled, err := c.scaleDownOld(ctx, d, all, activeRSs(old), newRS); err != nil {
		return err
	} else if scaled {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	if Complete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// scaleDownOld removes old pods within the availability budget: first the old
// ReplicaSets' unavailable pods, then available ones oldest ReplicaSet first.
func (c *Controller) scaleDownOld(ctx context.Context, d *appsv1.Deployment, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (bool, error) {
	if specCount(old) == 0 {
		return false, nil
	}
	budget := OldScaleDownBudget(d, all, newRS)
	if budget <= 0 {
		return false, nil
	}
	old = append([]*appsv1.ReplicaSet(nil), old...)
	byCreation(old)
	var total int32
	for i, rs := range old {
		if total >= budget {
			break
		}
		size := replicas(rs.Spec.Replicas)
		unhealthy := size - rs.Status.AvailableReplicas
		if size == 0 || unhealthy <= 0 {
			continue
		}
		down := min(budget-total, unhealthy)
		updated, err := c.scaleRS(ctx, rs, size-down, d)
		if err != nil {
			return total > 0, err
		}
		old[i] = updated
		total += down
	}
	minAvailable := desired(d) - MaxUnavailable(d)
	avail := availableCount(append(append([]*appsv1.ReplicaSet(nil), old...), newRS))
	if avail > minAvailable {
		// Never beyond the spec-based budget either: available counts come from ReplicaSet
		// statuses that may not yet show the scale-downs made a moment ago.
		left := min(avail-minAvailable, budget-total)
		var done int32
		for _, rs := range old {
			if done >= left {
				break
			}
			size := replicas(rs.Spec.Replicas)
			if size == 0 {
				continue
			}
			down := min(size, left-done)
			if _, err := c.scaleRS(ctx, rs, size-down, d); err != nil {
				return true, err
			}
			done += down
		}
		total += done
	}
	return total > 0, nil
}

func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	scaled := false
	for _, rs := range activeRSs(old) {
		if _, err := c.scaleRS(ctx, rs, 0, d); err != nil {
			return err
		}
		scaled = true
	}
	if scaled {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	// Recreate promises that old and new pods never run together: wait until every old
	// pod is gone, terminating ones included.
	for _, rs := range old {
		pods, err := c.podIndex.ByIndex(podcontrol.ControllerUIDIndex, string(rs.UID))
		if err != nil {
			return err
		}
		for _, o := range pods {
			p := o.(*corev1.Pod)
			if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				return c.syncRolloutStatus(ctx, d, all, newRS)
			}
		}
	}
	if newRS == nil {
		newRS, old, err = c.newAndOld(ctx, d, rsList, true)
		if err != nil {
			return err
		}
		all = append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	}
	if replicas(newRS.Spec.Replicas) != desired(d) {
		if _, err := c.scaleRS(ctx, newRS, desired(d), d); err != nil {
			return err
		}
	}
	if Complete(d, &d.Status) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// isScalingEvent reports whether d's replicas changed since its active ReplicaSets were
// last sized (their desired-replicas annotation).
func (c *Controller) isScalingEvent(d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) (bool, error) {
	newRS, old := findNewRS(d, rsList)
	for _, rs := range activeRSs(append(old, newRS)) {
		if v, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && v != desired(d) {
			return true, nil
		}
	}
	return false, nil
}

// syncScaled handles a paused Deployment or a resize: it scales without rolling out.
func (c *Controller) syncScaled(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rsList, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncStatusOnly(ctx, d, rsList)
}

func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	active := activeRSs(all)
	// One active ReplicaSet (or none): it takes all the replicas.
	if len(active) <= 1 {
		target := newRS
		if len(active) == 1 {
			target = active[0]
		} else if target == nil && len(old) > 0 {
			sorted := append([]*appsv1.ReplicaSet(nil), old...)
			byCreation(sorted)
			target = sorted[len(sorted)-1]
		}
		if target == nil {
			return nil
		}
		_, err := c.scaleRS(ctx, target, desired(d), d)
		return err
	}
	// The new ReplicaSet is complete: the old ones go.
	if newRS != nil && replicas(newRS.Spec.Replicas) == desired(d) && newRS.Status.AvailableReplicas == desired(d) {
		for _, rs := range activeRSs(old) {
			if _, err := c.scaleRS(ctx, rs, 0, d); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRolling(d) {
		return nil
	}
	sizes := Proportional(d, active)
	for _, rs := range active {
		if _, err := c.scaleRS(ctx, rs, sizes[rs.Name], d); err != nil {
			return err
		}
	}
	return nil
}

// cleanup deletes the oldest fully scaled-down ReplicaSets beyond revisionHistoryLimit.
func (c *Controller) cleanup(ctx context.Context, d *appsv1.Deployment, old []*appsv1.ReplicaSet) error {
	limit := int32(10)
	if d.Spec.RevisionHistoryLimit != nil {
		limit = *d.Spec.RevisionHistoryLimit
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	extra := len(alive) - int(limit)
	if extra <= 0 {
		return nil
	}
	sort.SliceStable(alive, func(i, j int) bool {
		ri, rj := Revision(alive[i].Annotations), Revision(alive[j].Annotations)
		if ri != rj {
			return ri < rj
		}
		return alive[i].CreationTimestamp.Before(&alive[j].CreationTimestamp)
	})
	for _, rs := range alive[:extra] {
		if replicas(rs.Spec.Replicas) != 0 || rs.Status.Replicas != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &rs.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete old replicaset %s/%s: %w", rs.Namespace, rs.Name, err)
		}
	}
	return nil
}

func (c *Controller) checkPaused(ctx context.Context, d *appsv1.Deployment) error {
	if !hasProgressDeadline(d) {
		return nil
	}
	cur := GetCondition(d.Status, appsv1.DeploymentProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return nil
	}
	pausedCond := cur != nil && cur.Reason == ReasonPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		SetCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonPaused, "Deployment is paused", c.now()))
	case !d.Spec.Paused && pausedCond:
		SetCondition(&d.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionUnknown, ReasonResumed, "Deployment is resumed", c.now()))
	default:
		return nil
	}
	updated, err := c.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	d.Status, d.ResourceVersion = updated.Status, updated.ResourceVersion
	return nil
}

func (c *Controller) syncStatusOnly(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	newRS, old := findNewRS(d, rsList)
	all := append(append([]*appsv1.ReplicaSet(nil), old...), newRS)
	st := CalculateStatus(d, all, newRS, c.now())
	return c.writeStatus(ctx, d, st)
}

func (c *Controller) syncRolloutStatus(ctx context.Context, d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) error {
	st, after := RolloutStatus(d, all, newRS, c.now())
	if err := c.writeStatus(ctx, d, st); err != nil {
		return err
	}
	if after > 0 {
		return worker.RequeueAfter(after)
	}
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, d *appsv1.Deployment, st appsv1.DeploymentStatus) error {
	if equality.Semantic.DeepEqual(d.Status, st) {
		return nil
	}
	cp := d.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().Deployments(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	// A conflict means a newer Deployment exists; its watch event queues the key again, so
	// this is not a failure to back off from.
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update status of deployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return nil
}
