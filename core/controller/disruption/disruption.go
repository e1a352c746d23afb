// Package disruption is the PodDisruptionBudget controller: it keeps each budget's status
// (currentHealthy, desiredHealthy, disruptionsAllowed, expectedPods, the DisruptionAllowed
// condition) from the pods its selector matches, as upstream's disruption controller does.
// The API server's pods/eviction subresource reads that status, decrements
// disruptionsAllowed and records the evicted pod in status.disruptedPods; this controller
// drops those entries once the pod is gone (or after two minutes, when the deletion never
// happened).
package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name of the controller (queue, metrics, logs).
const Name = "disruption"

// DeletionTimeout is how long an entry of status.disruptedPods keeps a pod out of the
// healthy count when the pod is not seen deleted (upstream's value).
const DeletionTimeout = 2 * time.Minute

// Controller is the PodDisruptionBudget controller.
type Controller struct {
	client    kubernetes.Interface
	pdbLister policylisters.PodDisruptionBudgetLister
	podLister corelisters.PodLister
	rsLister  appslisters.ReplicaSetLister
	depLister appslisters.DeploymentLister
	stsLister appslisters.StatefulSetLister
	synced    []cache.InformerSynced
	queue     worker.Queue
	recorder  record.EventRecorder
	log       *slog.Logger
	now       func() time.Time
}

// New wires the controller to the factory's PodDisruptionBudget, Pod, ReplicaSet,
// Deployment and StatefulSet informers (the last three give the expected pod count of a
// maxUnavailable or percentage budget).
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	pdbInf, podInf := f.Policy().V1().PodDisruptionBudgets(), f.Core().V1().Pods()
	rsInf, depInf, stsInf := f.Apps().V1().ReplicaSets(), f.Apps().V1().Deployments(), f.Apps().V1().StatefulSets()
	c := &Controller{client: client, pdbLister: pdbInf.Lister(), podLister: podInf.Lister(),
		rsLister: rsInf.Lister(), depLister: depInf.Lister(), stsLister: stsInf.Lister(),
		synced: []cache.InformerSynced{pdbInf.Informer().HasSynced, podInf.Informer().HasSynced,
			rsInf.Informer().HasSynced, depInf.Informer().HasSynced, stsInf.Informer().HasSynced},
		queue: worker.NewQueue(Name), recorder: recorder, log: log.With("controller", Name), now: time.Now}
	if _, err := pdbInf.Informer().AddEventHandler(worker.EnqueueAll(c.queue)); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podChanged,
		UpdateFunc: func(o, n any) {
			c.podChanged(n)
			if !apiequality.Semantic.DeepEqual(o.(*corev1.Pod).Labels, n.(*corev1.Pod).Labels) {
				c.podChanged(o)
			}
		},
		DeleteFunc: c.podChanged,
	}); err != nil {
		return nil, err
	}
	// A scale change moves expectedPods of maxUnavailable budgets.
	scaled := func(obj any) {
		if m, err := meta.Accessor(obj); err == nil {
			c.enqueueNamespace(m.GetNamespace())
		}
	}
	for _, inf := range []cache.SharedIndexInformer{rsInf.Informer(), depInf.Informer(), stsInf.Informer()} {
		if _, err := inf.AddEventHandler(worker.OnEvery(scaled)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Controller) enqueueNamespace(ns string) {
	pdbs, err := c.pdbLister.PodDisruptionBudgets(ns).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pdbs {
		c.queue.Add(p.Namespace + "/" + p.Name)
	}
}

func (c *Controller) podChanged(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	pdbs, err := c.pdbLister.PodDisruptionBudgets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range pdbs {
		if Selects(p, pod) {
			c.queue.Add(p.Namespace + "/" + p.Name)
		}
	}
}

// Selects reports whether budget p covers pod: in policy/v1 a nil selector selects
// nothing and an empty one every pod of the namespace.
func Selects(p *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if p.Spec.Selector == nil || p.Namespace != pod.Namespace {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// Run reconciles budgets with workers workers until ctx is done.
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
	pdb, err := c.pdbLister.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var pods []*corev1.Pod
	if pdb.Spec.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err == nil {
			if pods, err = c.podLister.Pods(ns).List(sel); err != nil {
				return err
			}
		}
	}
	expected, scaleErr := c.expectedScale(pdb, pods)
	if scaleErr != nil && c.recorder != nil {
		c.recorder.Event(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", scaleErr.Error())
	}
	now := c.now()
	status, requeue := Compute(pdb, pods, expected, scaleErr, now)
	if !apiequality.Semantic.DeepEqual(pdb.Status, status) {
		up := pdb.DeepCopy()
		up.Status = status
		if _, err := c.client.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, up, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if requeue > 0 {
		return worker.RequeueAfter(requeue)
	}
	return nil
}

// expectedScale is the sum of the scales of the controllers of pods, needed when the
// budget is maxUnavailable or a percentage (upstream's getExpectedScale): a pod without
// a controller of a known kind makes the budget allow no disruption.
func (c *Controller) expectedScale(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod) (int32, error) {
	if pdb.Spec.MaxUnavailable == nil && (pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type == intstr.Int) {
		return int32(len(pods)), nil
	}
	seen := map[types.UID]bool{}
	var total int32
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if ref == nil {
			return 0, fmt.Errorf("found no controller ref for pod %q", pod.Name)
		}
		uid, n, err := c.scaleOf(pod.Namespace, ref)
		if err != nil {
			return 0, err
		}
		if !seen[uid] {
			seen[uid] = true
			total += n
		}
	}
	return total, nil
}

func replicasOr1(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func (c *Controller) scaleOf(ns string, ref *metav1.OwnerReference) (types.UID, int32, error) {
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := c.rsLister.ReplicaSets(ns).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, fmt.Errorf("replicaset %s of the budget's pods not found", ref.Name)
		}
		// A Deployment's ReplicaSets share its scale.
		if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
			if d, err := c.depLister.Deployments(ns).Get(dref.Name); err == nil && d.UID == dref.UID {
				return d.UID, replicasOr1(d.Spec.Replicas), nil
			}
		}
		return rs.UID, replicasOr1(rs.Spec.Replicas), nil
	case "StatefulSet":
		ss, err := c.stsLister.StatefulSets(ns).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return "", 0, fmt.Errorf("statefulset %s of the budget's pods not found", ref.Name)
		}
		return ss.UID, replicasOr1(ss.Spec.Replicas), nil
	}
	return "", 0, fmt.Errorf("pods of %s %s: the disruption controller knows the scale of ReplicaSets, Deployments and StatefulSets only", ref.Kind, ref.Name)
}

// PodHealthy reports whether a pod counts toward currentHealthy: not being deleted and
// Ready.
func PodHealthy(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Compute is the budget's status for pods (those its selector matches) and the expected
// pod count, at now. A non-nil scaleErr (the expected count is unknown) allows no
// disruption. requeue > 0 asks to look again when an entry of disruptedPods expires.
func Compute(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, expected int32, scaleErr error, now time.Time) (policyv1.PodDisruptionBudgetStatus, time.Duration) {
	st := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, ExpectedPods: expected}
	// Evicted pods not yet seen deleted stay out of the healthy count for a while.
	present := map[string]*corev1.Pod{}
	for _, p := range pods {
		present[p.Name] = p
	}
	var requeue time.Duration
	for name, at := range pdb.Status.DisruptedPods {
		p, ok := present[name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		left := at.Add(DeletionTimeout).Sub(now)
		if left <= 0 {
			continue
		}
		if st.DisruptedPods == nil {
			st.DisruptedPods = map[string]metav1.Time{}
		}
		st.DisruptedPods[name] = at
		if requeue == 0 || left < requeue {
			requeue = left
		}
	}
	for _, p := range pods {
		if _, disrupted := st.DisruptedPods[p.Name]; !disrupted && PodHealthy(p) {
			st.CurrentHealthy++
		}
	}
	if scaleErr != nil {
		st.ExpectedPods = 0
		st.DesiredHealthy = 0
		st.DisruptionsAllowed = 0
	} else {
		switch {
		case pdb.Spec.MaxUnavailable != nil:
			maxU, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(expected), true)
			if err == nil {
				st.DesiredHealthy = max(0, expected-int32(maxU))
			}
		case pdb.Spec.MinAvailable != nil:
			if pdb.Spec.MinAvailable.Type == intstr.Int {
				st.DesiredHealthy = pdb.Spec.MinAvailable.IntVal
			} else if v, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(expected), true); err == nil {
				st.DesiredHealthy = int32(v)
			}
		}
		// As upstream: no disruption while no pod is expected.
		if expected > 0 {
			st.DisruptionsAllowed = max(0, st.CurrentHealthy-st.DesiredHealthy)
		}
	}
	cond := metav1.Condition{Type: policyv1.DisruptionAllowedCondition, ObservedGeneration: pdb.Generation}
	switch {
	case scaleErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, policyv1.SyncFailedReason, scaleErr.Error()
	case st.DisruptionsAllowed > 0:
		cond.Status, cond.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, policyv1.InsufficientPodsReason
	}
	st.Conditions = []metav1.Condition{cond}
	// Keep the transition time when the condition did not change.
	cond.LastTransitionTime = metav1.NewTime(now)
	for _, old := range pdb.Status.Conditions {
		if old.Type == cond.Type && old.Status == cond.Status {
			cond.LastTransitionTime = old.LastTransitionTime
		}
	}
	st.Conditions[0] = cond
	return st, requeue
}
