// Package daemonset runs one pod of each DaemonSet on every eligible node, as upstream's
// DaemonSet controller: a node is eligible when it matches the template's nodeSelector and
// required node affinity and every NoSchedule/NoExecute taint is tolerated (the pods get
// upstream's automatic tolerations: not-ready, unreachable, disk/memory/pid pressure,
// unschedulable). The controller does not bind pods itself: as upstream, it gives each pod
// a required node affinity for its node's name and the scheduler binds it. Nodes that
// appear get a pod; pods of nodes that vanish or stop matching go. RollingUpdate replaces
// old pods within maxUnavailable (or, with maxSurge, starts the new pod first and removes
// the old one once the new one is available); OnDelete waits for the user to delete them.
// Pod templates are ControllerRevisions (core/controller/history), so `kubectl rollout
// status|history|undo` work.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	schedhelpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/wasmkube/wasmkube/core/controller/expectations"
	"github.com/wasmkube/wasmkube/core/controller/history"
	"github.com/wasmkube/wasmkube/core/controller/podcontrol"
	"github.com/wasmkube/wasmkube/core/controller/podstate"
	"github.com/wasmkube/wasmkube/core/controller/replicaset"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// Name is the controller's name in logs, metrics and events.
const Name = "daemonset"

// Labels of daemon pods (upstream's).
const (
	RevisionLabel    = appsv1.DefaultDaemonSetUniqueLabelKey // controller-revision-hash: the revision's hash
	GenerationLabel  = "pod-template-generation"
	nodeNameField    = "metadata.name"
	burstPerPassMax  = replicaset.BurstReplicas
	availabilityPoll = time.Second
)

// Controller is the DaemonSet controller.
type Controller struct {
	client     kubernetes.Interface
	dsLister   appslisters.DaemonSetLister
	pods       *podcontrol.Pods
	nodeLister corelisters.NodeLister
	hist       *history.History
	synced     []cache.InformerSynced
	queue      worker.Queue
	exp        *expectations.Expectations
	batches    podcontrol.Batches
	recorder   record.EventRecorder
	log        *slog.Logger
	now        func() time.Time
}

// New wires the controller to the factory's DaemonSet, Pod, Node and ControllerRevision informers.
func New(client kubernetes.Interface, f informers.SharedInformerFactory, recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	dsInf, nodeInf, crInf := f.Apps().V1().DaemonSets(), f.Core().V1().Nodes(), f.Apps().V1().ControllerRevisions()
	pods, err := podcontrol.NewPods(client, f.Core().V1().Pods())
	if err != nil {
		return nil, err
	}
	c := &Controller{
		client: client, dsLister: dsInf.Lister(), pods: pods, nodeLister: nodeInf.Lister(),
		hist: history.New(client, f),
		synced: []cache.InformerSynced{dsInf.Informer().HasSynced, pods.Synced,
			nodeInf.Informer().HasSynced, crInf.Informer().HasSynced},
		queue: worker.NewQueue(Name), exp: expectations.New(),
		recorder: recorder, log: log.With("controller", Name), now: time.Now,
	}
	if _, err := dsInf.Informer().AddEventHandler(podcontrol.OwnerHandler(c.queue, c.exp, c.batches.Forget)); err != nil {
		return nil, err
	}
	events := &podcontrol.Events[*appsv1.DaemonSet]{
		Kind: "DaemonSet", Queue: c.queue, Expectations: c.exp,
		Get: func(ns, name string) (*appsv1.DaemonSet, error) { return c.dsLister.DaemonSets(ns).Get(name) },
		List: func(ns string) ([]*appsv1.DaemonSet, error) {
			return c.dsLister.DaemonSets(ns).List(labels.Everything())
		},
		Selector: func(ds *appsv1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector },
	}
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(events.Handler()); err != nil {
		return nil, err
	}
	// Any node change may change where daemon pods belong: look at every DaemonSet.
	all := func(any) { c.enqueueAll() }
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: all, DeleteFunc: all,
		UpdateFunc: func(o, n any) {
			a, b := o.(*corev1.Node), n.(*corev1.Node)
			if !equality.Semantic.DeepEqual(a.Labels, b.Labels) || !equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) ||
				a.Spec.Unschedulable != b.Spec.Unschedulable {
				c.enqueueAll()
			}
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles DaemonSets with workers workers until ctx is done.
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

func (c *Controller) enqueueAll() {
	sets, err := c.dsLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.enqueue(ds)
	}
}

// daemonTolerations are the tolerations upstream adds to every daemon pod.
func daemonTolerations(p *corev1.Pod) {
	add := func(key string, effect corev1.TaintEffect) {
		for _, t := range p.Spec.Tolerations {
			if t.Key == key && t.Effect == effect && t.Operator == corev1.TolerationOpExists {
				return
			}
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect})
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if p.Spec.HostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}

// withNodeAffinity requires the pod to land on node, keeping the template's other
// requirements (upstream's ReplaceDaemonSetPodNodeNameNodeAffinity).
func withNodeAffinity(p *corev1.Pod, node string) {
	field := corev1.NodeSelectorRequirement{Key: nodeNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchFields: []corev1.NodeSelectorRequirement{field}}}}
		return
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchFields = []corev1.NodeSelectorRequirement{field}
	}
}

// NewPod is ds's pod for node at revision hash.
func NewPod(ds *appsv1.DaemonSet, node, hash string) *corev1.Pod {
	t := ds.Spec.Template.DeepCopy()
	lbls := map[string]string{}
	for k, v := range t.Labels {
		lbls[k] = v
	}
	lbls[RevisionLabel] = hash
	lbls[GenerationLabel] = strconv.FormatInt(ds.Generation, 10)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: ds.Name + "-", Namespace: ds.Namespace, Labels: lbls, Annotations: t.Annotations, Finalizers: t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{podstate.ControllerRef(ds, "apps/v1", "DaemonSet")},
		},
		Spec: t.Spec,
	}
	daemonTolerations(p)
	if node != "" {
		withNodeAffinity(p, node)
	}
	return p
}

// ShouldRun reports whether ds's pod should be started on node, and whether a pod already
// there may keep running (a NoSchedule taint keeps new pods off but does not evict).
func ShouldRun(ds *appsv1.DaemonSet, node *corev1.Node) (run, keepRunning bool) {
	return newEligibility(ds).shouldRun(node)
}

// eligibility is what ShouldRun needs of ds's pod, built once per pass rather than once
// per node (a pass over 500 nodes copied the template 500 times).
type eligibility struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []corev1.Toleration
}

func newEligibility(ds *appsv1.DaemonSet) eligibility {
	p := NewPod(ds, "", "")
	return eligibility{affinity: nodeaffinity.GetRequiredNodeAffinity(p), tolerations: p.Spec.Tolerations}
}

func (e eligibility) shouldRun(node *corev1.Node) (bool, bool) {
	if ok, _ := e.affinity.Match(node); !ok {
		return false, false
	}
	taint, untolerated := schedhelpers.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, e.tolerations,
		func(t *corev1.Taint) bool {
			return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
		}, false)
	if untolerated {
		return false, taint.Effect != corev1.TaintEffectNoExecute
	}
	return true, true
}

// nodeOf is the node a daemon pod is for: where it is bound, or its affinity's node name.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, f := range t.MatchFields {
				if f.Key == nodeNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
					return f.Values[0]
				}
			}
		}
	}
	return ""
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.dsLister.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.exp.Forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil || sel.Empty() {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "InvalidSelector", "spec.selector is invalid or empty: %v", err)
		return nil
	}
	owner := history.Owner{Obj: ds, APIVersion: "apps/v1", Kind: "DaemonSet", Selector: sel,
		Template: &ds.Spec.Template, CollisionCount: ds.Status.CollisionCount}
	revs, err := c.hist.List(owner)
	if err != nil {
		return err
	}
	cur, collisions, err := c.hist.Update(ctx, owner, revs)
	if err != nil {
		return err
	}
	hash := cur.Labels[history.HashLabel]
	pods, err := c.claimPods(ctx, ds, sel)
	if err != nil {
		return err
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		return err
	}
	now := c.now()
	p := Plan(ds, nodes, pods, hash, now)
	var actErr error
	if c.exp.Satisfied(key) && ds.DeletionTimestamp == nil {
		actErr = c.act(ctx, key, ds, p, hash)
	}
	st := p.Status
	st.CollisionCount = collisions
	if err := c.updateStatus(ctx, ds, st); err != nil {
		return err
	}
	if actErr != nil {
		return actErr
	}
	keep := map[string]bool{cur.Name: true}
	for _, cr := range revs {
		for _, pod := range pods {
			if pod.Labels[RevisionLabel] == cr.Labels[history.HashLabel] {
				keep[cr.Name] = true
			}
		}
	}
	limit := int32(10)
	if ds.Spec.RevisionHistoryLimit != nil {
		limit = *ds.Spec.RevisionHistoryLimit
	}
	if revs, err = c.hist.List(owner); err == nil {
		err = c.hist.Truncate(ctx, revs, keep, limit)
	}
	if err != nil {
		return err
	}
	if p.WaitForAvailability {
		return worker.RequeueAfter(availabilityPoll)
	}
	return nil
}

func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, sel labels.Selector) ([]*corev1.Pod, error) {
	return c.pods.Claim(ctx, ds, podstate.ControllerRef(ds, "apps/v1", "DaemonSet"), sel, nil)
}

// Decision is one pass over a DaemonSet: the nodes to start a pod on, the pods to delete,
// the status, and whether to look again for pods becoming available.
type Decision struct {
	CreateOn            []string
	Delete              []*corev1.Pod
	Status              appsv1.DaemonSetStatus
	WaitForAvailability bool
}

// Plan decides one pass from the nodes, the DaemonSet's pods and the current revision's
// hash. It is pure.
func Plan(ds *appsv1.DaemonSet, nodes []*corev1.Node, pods []*corev1.Pod, hash string, now time.Time) *Decision {
	d := &Decision{}
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNode[nodeOf(p)] = append(byNode[nodeOf(p)], p)
	}
	st := appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, Conditions: ds.Status.Conditions}
	available := func(p *corev1.Pod) bool {
		return podstate.IsActive(p) && podstate.IsReady(p) && podstate.IsAvailable(p, ds.Spec.MinReadySeconds, now)
	}
	known := map[string]bool{}
	// Per eligible node: its active pods, old (other revision) and new.
	type slot struct {
		node     string
		old, new []*corev1.Pod
	}
	var slots []slot
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	elig := newEligibility(ds)
	for _, node := range nodes {
		known[node.Name] = true
		shouldRun, keep := elig.shouldRun(node)
		var active []*corev1.Pod
		for _, p := range byNode[node.Name] {
			switch {
			case p.DeletionTimestamp != nil:
			case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
				d.Delete = append(d.Delete, p) // a daemon pod that ended is replaced
			default:
				active = append(active, p)
			}
		}
		if shouldRun {
			st.DesiredNumberScheduled++
		}
		if !keep {
			d.Delete = append(d.Delete, active...)
			if len(active) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		if !shouldRun && len(active) > 0 {
			st.NumberMisscheduled++
			continue // a NoSchedule taint: the pod stays, no new one comes
		}
		if !shouldRun {
			continue
		}
		s := slot{node: node.Name}
		for _, p := range active {
			if p.Labels[RevisionLabel] == hash {
				s.new = append(s.new, p)
			} else {
				s.old = append(s.old, p)
			}
		}
		// Duplicates: keep the oldest new pod (or old pod if there is no new one).
		sort.Slice(s.new, func(i, j int) bool { return s.new[i].CreationTimestamp.Before(&s.new[j].CreationTimestamp) })
		if len(s.new) > 1 {
			d.Delete = append(d.Delete, s.new[1:]...)
			s.new = s.new[:1]
		}
		if len(s.new) == 0 && len(s.old) > 1 {
			sort.Slice(s.old, func(i, j int) bool { return s.old[i].CreationTimestamp.Before(&s.old[j].CreationTimestamp) })
			d.Delete = append(d.Delete, s.old[1:]...)
			s.old = s.old[:1]
		}
		if len(s.new)+len(s.old) > 0 {
			st.CurrentNumberScheduled++
		}
		for _, p := range append(append([]*corev1.Pod(nil), s.new...), s.old...) {
			if podstate.IsReady(p) {
				st.NumberReady++
			}
		}
		if len(s.new) > 0 {
			st.UpdatedNumberScheduled++
		}
		if (len(s.new) > 0 && available(s.new[0])) || (len(s.old) > 0 && available(s.old[0])) {
			st.NumberAvailable++
		}
		slots = append(slots, s)
	}
	// Pods of nodes that are gone.
	for node, ps := range byNode {
		if !known[node] {
			for _, p := range ps {
				if p.DeletionTimestamp == nil {
					d.Delete = append(d.Delete, p)
				}
			}
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable

	rolling := ds.Spec.UpdateStrategy.Type != appsv1.OnDeleteDaemonSetStrategyType
	maxUnavailable, maxSurge := 1, 0
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; rolling && ru != nil {
		desired := int(st.DesiredNumberScheduled)
		if ru.MaxUnavailable != nil {
			maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		}
		if ru.MaxSurge != nil {
			maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if maxUnavailable == 0 && maxSurge == 0 {
			maxUnavailable = 1
		}
	}
	// Unavailable now: nodes whose pod (new, or old while no new exists) is not available.
	unavailable, surging := 0, 0
	for _, s := range slots {
		switch {
		case len(s.new) > 0 && len(s.old) > 0:
			surging++
			if !available(s.new[0]) && !available(s.old[0]) {
				unavailable++
			}
		case len(s.new) > 0:
			if !available(s.new[0]) {
				unavailable++
			}
		case len(s.old) > 0:
			if !available(s.old[0]) {
				unavailable++
			}
		default:
			unavailable++
		}
	}
	for _, s := range slots {
		switch {
		case len(s.new)+len(s.old) == 0:
			d.CreateOn = append(d.CreateOn, s.node)
		case !rolling || len(s.old) == 0:
		case len(s.new) > 0:
			// A surge pod runs beside the old one: the old one goes once the new is available.
			if available(s.new[0]) {
				d.Delete = append(d.Delete, s.old...)
			}
		case maxSurge > 0:
			if surging < maxSurge || !available(s.old[0]) {
				d.CreateOn = append(d.CreateOn, s.node)
				surging++
			}
		case !available(s.old[0]):
			d.Delete = append(d.Delete, s.old...) // already unavailable: free to replace
		case unavailable < maxUnavailable:
			d.Delete = append(d.Delete, s.old...)
			unavailable++
		}
	}
	// Pods become available minReadySeconds after they are ready, with no event to say so.
	if ds.Spec.MinReadySeconds > 0 && st.NumberAvailable < st.NumberReady {
		d.WaitForAvailability = true
	}
	if len(d.CreateOn) > burstPerPassMax {
		d.CreateOn = d.CreateOn[:burstPerPassMax]
	}
	d.Status = st
	return d
}

func (c *Controller) act(ctx context.Context, key string, ds *appsv1.DaemonSet, p *Decision, hash string) error {
	var mu sync.Mutex
	var errs []error
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	errs = append(errs, podcontrol.DeletePods(ctx, c.client, c.recorder, c.exp, key, ds, p.Delete)...)
	if n := len(p.CreateOn); n > 0 {
		c.exp.ExpectCreations(key, n)
		next := make(chan string, n)
		for _, node := range p.CreateOn {
			next <- node
		}
		close(next)
		created, err := replicaset.SlowStart(n, c.batches.Initial(key, n), func() error {
			node := <-next
			pod, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, NewPod(ds, node, hash), metav1.CreateOptions{})
			if err != nil {
				if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
				}
				return fmt.Errorf("create pod of daemonset %s/%s on node %s: %w", ds.Namespace, ds.Name, node, err)
			}
			c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %s", pod.Name)
			return nil
		})
		c.batches.Done(key, created, err)
		for range n - created {
			c.exp.CreationObserved(key)
		}
		if err != nil {
			fail(err)
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus) error {
	if equality.Semantic.DeepEqual(ds.Status, st) {
		return nil
	}
	cp := ds.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().DaemonSets(cp.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("update status of daemonset %s/%s: %w", ds.Namespace, ds.Name, err)
}
