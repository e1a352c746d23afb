// Package statefulset gives each StatefulSet replicas pods with stable identities, as
// upstream's StatefulSet controller: pod <set>-<ordinal> with hostname <set>-<ordinal> and
// subdomain spec.serviceName (so the headless Service gives it a stable DNS name), created
// in ordinal order and each only once the ones before it are Running and Ready
// (OrderedReady; Parallel creates and deletes all at once), removed in reverse order on
// scale-down, and replaced highest ordinal first on a RollingUpdate down to
// spec.updateStrategy.rollingUpdate.partition (OnDelete leaves that to the user). Every
// pod template is a ControllerRevision (core/controller/history) and pods carry its name
// as controller-revision-hash, so status.currentRevision/updateRevision and `kubectl
// rollout status|history|undo` work as upstream.
//
// volumeClaimTemplates: before a pod is created its claims <template>-<pod> are (as
// upstream: web-data-web-0 ...), with the template's spec and the selector's labels; they
// outlive the pod, so a pod replaced under the same name mounts the same data. With
// persistentVolumeClaimRetentionPolicy.whenDeleted Delete the claims are owned by the set
// and the garbage collector removes them with it; whenScaled Delete is not carried out
// (the claims of scaled-down pods stay, as with Retain).
package statefulset

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
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

	"github.com/wasmkube/wasmkube/core/controller/history"
	"github.com/wasmkube/wasmkube/core/controller/podcontrol"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "statefulset"

// Labels every pod of a StatefulSet carries (upstream's).
const (
	RevisionLabel = appsv1.ControllerRevisionHashLabelKey // controller-revision-hash
	PodNameLabel  = appsv1.StatefulSetPodNameLabel        // statefulset.kubernetes.io/pod-name
	PodIndexLabel = appsv1.PodIndexLabel                  // apps.kubernetes.io/pod-index
)

// Controller is the StatefulSet controller.
type Controller struct {
	client   kubernetes.Interface
	ssLister appslisters.StatefulSetLister
	pods     *podcontrol.Pods
	hist     *history.History
	synced   []cache.InformerSynced
	queue    worker.Queue
	recorder record.EventRecorder
	log      *slog.Logger
	now      func() time.Time
}

// New wires the controller to the factory's StatefulSet, Pod and ControllerRevision informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	ssInf := f.Apps().V1().StatefulSets()
	crInf := f.Apps().V1().ControllerRevisions()
	pods, err := podcontrol.NewPods(client, f.Core().V1().Pods())
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, ssLister: ssInf.Lister(), pods: pods,
		hist:     history.New(client, f),
		synced:   []cache.InformerSynced{ssInf.Informer().HasSynced, pods.Synced, crInf.Informer().HasSynced},
		queue:    worker.NewQueue(Name),
		recorder: recorder, log: log.With("controller", Name), now: time.Now,
	}
	if _, err := ssInf.Informer().AddEventHandler(podcontrol.OwnerHandler(c.queue, nil, nil)); err != nil {
		return nil, err
	}
	get := func(ns, name string) (*appsv1.StatefulSet, error) { return c.ssLister.StatefulSets(ns).Get(name) }
	podEvents := &podcontrol.Events[*appsv1.StatefulSet]{
		Kind: "StatefulSet", Queue: c.queue, Get: get,
		List: func(ns string) ([]*appsv1.StatefulSet, error) {
			return c.ssLister.StatefulSets(ns).List(labels.Everything())
		},
		Selector: func(ss *appsv1.StatefulSet) *metav1.LabelSelector { return ss.Spec.Selector },
	}
	// A revision's change (or loss) may change the set's status and rollout.
	revEvents := &podcontrol.Events[*appsv1.StatefulSet]{Kind: "StatefulSet", Queue: c.queue, Get: get}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(podEvents.Handler()); err != nil {
		return nil, err
	}
	if _, err := crInf.Informer().AddEventHandler(revEvents.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles StatefulSets with workers workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.sync, c.log)
}

// Ordinal parses the ordinal of a pod named <set>-<n>; -1 if the name is not one.
func Ordinal(set, pod string) int {
	rest, ok := strings.CutPrefix(pod, set+"-")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return -1
	}
	return n
}

// PodName is the name of the pod with ordinal n.
func PodName(ss *appsv1.StatefulSet, n int) string { return fmt.Sprintf("%s-%d", ss.Name, n) }

// NewPod is pod n of ss at revision rev (whose template is tmpl).
func NewPod(ss *appsv1.StatefulSet, tmpl *corev1.PodTemplateSpec, rev string, n int) *corev1.Pod {
	t := tmpl.DeepCopy()
	name := PodName(ss, n)
	lbls := map[string]string{}
	for k, v := range t.Labels {
		lbls[k] = v
	}
	lbls[RevisionLabel], lbls[PodNameLabel], lbls[PodIndexLabel] = rev, name, strconv.Itoa(n)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ss.Namespace, Labels: lbls, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{podstate.ControllerRef(ss, "apps/v1", "StatefulSet")},
		},
		Spec: t.Spec,
	}
	p.Spec.Hostname = name
	if ss.Spec.ServiceName != "" {
		p.Spec.Subdomain = ss.Spec.ServiceName
	}
	for _, claim := range ss.Spec.VolumeClaimTemplates {
		has := false
		for _, v := range p.Spec.Volumes {
			has = has || v.Name == claim.Name
		}
		if !has {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: claim.Name, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name + "-" + name}}})
		}
	}
	return p
}

func isHealthy(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podstate.IsReady(p)
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ss, err := c.ssLister.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(ss.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Eventf(ss, corev1.EventTypeWarning, "InvalidSelector", "spec.selector is invalid or empty: %v", err)
		return nil
	}
	pods, err := c.claimPods(ctx, ss, sel)
	if err != nil {
		return err
	}
	owner := history.Owner{Obj: ss, APIVersion: "apps/v1", Kind: "StatefulSet", Selector: sel,
		Template: &ss.Spec.Template, CollisionCount: ss.Status.CollisionCount}
	revs, err := c.hist.List(owner)
	if err != nil {
		return err
	}
	update, collisions, err := c.hist.Update(ctx, owner, revs)
	if err != nil {
		return err
	}
	current := update
	for _, cr := range revs {
		if cr.Name == ss.Status.CurrentRevision && cr.Name != update.Name {
			current = cr
		}
	}
	currentTmpl, err := history.Template(current)
	if err != nil {
		return err
	}
	st, waitErr := c.reconcile(ctx, ss, pods, current, currentTmpl, update)
	st.CollisionCount = collisions
	if err := c.updateStatus(ctx, ss, st); err != nil {
		return err
	}
	if waitErr != nil {
		return waitErr
	}
	keep := map[string]bool{current.Name: true, update.Name: true}
	for _, p := range pods {
		keep[p.Labels[RevisionLabel]] = true
	}
	limit := int32(10)
	if ss.Spec.RevisionHistoryLimit != nil {
		limit = *ss.Spec.RevisionHistoryLimit
	}
	revs, err = c.hist.List(owner)
	if err != nil {
		return err
	}
	return c.hist.Truncate(ctx, revs, keep, limit)
}

func (c *Controller) claimPods(ctx context.Context, ss *appsv1.StatefulSet, sel labels.Selector) ([]*corev1.Pod, error) {
	// Only pods named as this set's members are adopted, as upstream.
	member := func(p *corev1.Pod) bool { return Ordinal(ss.Name, p.Name) >= 0 }
	return c.pods.Claim(ctx, ss, podstate.ControllerRef(ss, "apps/v1", "StatefulSet"), sel, member)
}

// reconcile makes one monotonic step towards the spec and returns the status. With
// OrderedReady it creates, deletes or replaces at most one pod per pass and only while
// every other pod is healthy, so the order holds on every event.
func (c *Controller) reconcile(ctx context.Context, ss *appsv1.StatefulSet, pods []*corev1.Pod,
	current *appsv1.ControllerRevision, currentTmpl *corev1.PodTemplateSpec, update *appsv1.ControllerRevision) (appsv1.StatefulSetStatus, error) {
	replicas := 1
	if ss.Spec.Replicas != nil {
		replicas = int(*ss.Spec.Replicas)
	}
	start := 0
	if ss.Spec.Ordinals != nil {
		start = int(ss.Spec.Ordinals.Start)
	}
	parallel := ss.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
	partition := 0
	rolling := ss.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType
	if rolling && ss.Spec.UpdateStrategy.RollingUpdate != nil && ss.Spec.UpdateStrategy.RollingUpdate.Partition != nil {
		partition = int(*ss.Spec.UpdateStrategy.RollingUpdate.Partition)
	}
	members := map[int]*corev1.Pod{} // ordinal in range
	var condemned []*corev1.Pod      // ordinals out of range, highest first
	for _, p := range pods {
		n := Ordinal(ss.Name, p.Name)
		if n >= start && n < start+replicas {
			members[n] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	sort.Slice(condemned, func(i, j int) bool { return Ordinal(ss.Name, condemned[i].Name) > Ordinal(ss.Name, condemned[j].Name) })
	now := c.now()
	st := c.status(ss, pods, current, update, now)
	if ss.DeletionTimestamp != nil {
		return st, nil
	}
	// revisionFor is the revision a (re)created pod n gets: below the partition the current
	// one, as upstream.
	revisionFor := func(n int) (string, *corev1.PodTemplateSpec) {
		if rolling && n-start < partition {
			return current.Name, currentTmpl
		}
		return update.Name, &ss.Spec.Template
	}
	// 1. Members: replace terminal pods, create missing ones, in order.
	for n := start; n < start+replicas; n++ {
		p := members[n]
		if p != nil && isTerminal(p) && p.DeletionTimestamp == nil {
			c.deletePod(ctx, ss, p, "failed")
			if !parallel {
				return st, nil
			}
			continue
		}
		if p == nil {
			rev, tmpl := revisionFor(n)
			if err := c.createPod(ctx, ss, NewPod(ss, tmpl, rev, n)); err != nil {
				return st, err
			}
			if !parallel {
				return st, nil
			}
			continue
		}
		if !parallel && !isHealthy(p) {
			return st, nil // wait for this one before touching later ordinals
		}
	}
	// 2. Condemned pods go, highest ordinal first (all at once with Parallel).
	for _, p := range condemned {
		if p.DeletionTimestamp != nil {
			if !parallel {
				return st, nil
			}
			continue
		}
		if !parallel {
			for _, m := range members {
				if !isHealthy(m) {
					return st, nil
				}
			}
		}
		c.deletePod(ctx, ss, p, "scale down")
		if !parallel {
			return st, nil
		}
	}
	// 3. RollingUpdate: the highest out-of-date member above the partition is replaced,
	// one at a time and only while every member is healthy.
	if !rolling {
		return st, nil
	}
	for n := start + replicas - 1; n >= start+partition; n-- {
		p := members[n]
		if p == nil || !isHealthy(p) {
			return st, nil
		}
		if p.Labels[RevisionLabel] != update.Name {
			c.deletePod(ctx, ss, p, "update")
			return st, nil
		}
	}
	return st, nil
}

// NewClaims are the claims pod n of ss mounts, from spec.volumeClaimTemplates.
func NewClaims(ss *appsv1.StatefulSet, n int) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for _, t := range ss.Spec.VolumeClaimTemplates {
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: t.Name + "-" + PodName(ss, n), Namespace: ss.Namespace,
				Labels: map[string]string{}, Annotations: t.Annotations},
			Spec: *t.Spec.DeepCopy(),
		}
		for k, v := range t.Labels {
			pvc.Labels[k] = v
		}
		if ss.Spec.Selector != nil {
			for k, v := range ss.Spec.Selector.MatchLabels {
				pvc.Labels[k] = v
			}
		}
		if rp := ss.Spec.PersistentVolumeClaimRetentionPolicy; rp != nil && rp.WhenDeleted == appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
			ref := podstate.ControllerRef(ss, "apps/v1", "StatefulSet")
			f := false
			ref.Controller = &f // owned, not controlled: the set does not adopt claims
			pvc.OwnerReferences = []metav1.OwnerReference{ref}
		}
		out = append(out, pvc)
	}
	return out
}

// createClaims creates the claims of pod n that do not exist yet; an existing claim is
// kept as it is (its data is what the pod is to find).
func (c *Controller) createClaims(ctx context.Context, ss *appsv1.StatefulSet, n int) error {
	for _, pvc := range NewClaims(ss, n) {
		_, err := c.client.CoreV1().PersistentVolumeClaims(ss.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err == nil {
			c.recorder.Eventf(ss, corev1.EventTypeNormal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", pvc.Name, PodName(ss, n), ss.Name)
			continue
		}
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		c.recorder.Eventf(ss, corev1.EventTypeWarning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v", pvc.Name, PodName(ss, n), ss.Name, err)
		return fmt.Errorf("create claim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

func (c *Controller) createPod(ctx context.Context, ss *appsv1.StatefulSet, p *corev1.Pod) error {
	if n := Ordinal(ss.Name, p.Name); n >= 0 && len(ss.Spec.VolumeClaimTemplates) > 0 {
		if err := c.createClaims(ctx, ss, n); err != nil {
			return err
		}
	}
	_, err := c.client.CoreV1().Pods(ss.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // the informer shows it shortly
	}
	if err != nil {
		c.recorder.Eventf(ss, corev1.EventTypeWarning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", p.Name, ss.Name, err)
		return fmt.Errorf("create pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	c.recorder.Eventf(ss, corev1.EventTypeNormal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", p.Name, ss.Name)
	return nil
}

func (c *Controller) deletePod(ctx context.Context, ss *appsv1.StatefulSet, p *corev1.Pod, why string) {
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		c.recorder.Eventf(ss, corev1.EventTypeWarning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", p.Name, ss.Name, err)
		return
	}
	c.log.Debug("deleted pod", "statefulset", ss.Namespace+"/"+ss.Name, "pod", p.Name, "why", why)
	c.recorder.Eventf(ss, corev1.EventTypeNormal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", p.Name, ss.Name)
}

// status counts the set's pods as upstream: replicas are the pods that exist (not
// terminating), current/updated by revision label; once every replica runs the update
// revision it becomes the current one.
func (c *Controller) status(ss *appsv1.StatefulSet, pods []*corev1.Pod, current, update *appsv1.ControllerRevision, now time.Time) appsv1.StatefulSetStatus {
	st := appsv1.StatefulSetStatus{ObservedGeneration: ss.Generation, CurrentRevision: current.Name, UpdateRevision: update.Name,
		CollisionCount: ss.Status.CollisionCount, Conditions: ss.Status.Conditions}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || isTerminal(p) {
			continue
		}
		st.Replicas++
		if podstate.IsReady(p) {
			st.ReadyReplicas++
			if podstate.IsAvailable(p, ss.Spec.MinReadySeconds, now) {
				st.AvailableReplicas++
			}
		}
		if p.Labels[RevisionLabel] == current.Name {
			st.CurrentReplicas++
		}
		if p.Labels[RevisionLabel] == update.Name {
			st.UpdatedReplicas++
		}
	}
	replicas := int32(1)
	if ss.Spec.Replicas != nil {
		replicas = *ss.Spec.Replicas
	}
	if st.UpdatedReplicas >= replicas && st.Replicas == replicas && st.ReadyReplicas == replicas {
		st.CurrentRevision, st.CurrentReplicas = update.Name, st.UpdatedReplicas
	}
	return st
}

func (c *Controller) updateStatus(ctx context.Context, ss *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	if equality.Semantic.DeepEqual(ss.Status, st) {
		return nil
	}
	cp := ss.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().StatefulSets(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("update status of statefulset %s/%s: %w", ss.Namespace, ss.Name, err)
}
