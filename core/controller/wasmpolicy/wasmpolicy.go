// Package wasmpolicy is the WasmPolicy controller: it rolls the components' reports
// (WasmPolicyReports, plugins/wasmpolicy/report) up into each policy's status (one entry
// per live targeted component, Ready n/m, Degraded, observedGeneration), records an Event
// on the policy for each component's failure, keeps each spec as a ControllerRevision (the
// last HistoryLimit), and rolls a policy back when spec.revision asks for it. Decisions are
// pure (Targets, Plan, PlanRevisions); this file does the I/O. docs/wasmpolicy-status.md.
package wasmpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	coordlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/controller/worker"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// Name is the controller's name in logs, metrics and Events.
const Name = "wasmpolicy-controller"

// Event reasons on a WasmPolicy.
const (
	EventFailed           = "PolicyFailed"
	EventRolledBack       = "RolledBack"
	EventRevisionNotFound = "RollbackRevisionNotFound"
)

const byPolicy = "policy"

// Controller rolls WasmPolicy reports up and keeps the policies' revisions.
type Controller struct {
	client   kubernetes.Interface
	dyn      dynamic.Interface
	policies cache.SharedIndexInformer
	reports  cache.SharedIndexInformer
	nodes    corelisters.NodeLister
	leases   coordlisters.LeaseLister
	revs     appslisters.ControllerRevisionLister
	synced   []cache.InformerSynced
	queue    worker.Queue
	recorder record.EventRecorder
	log      *slog.Logger
	now      func() time.Time

	mu      sync.Mutex
	evented map[string]string // policy uid/component/name -> the failure last recorded as an Event
}

// New wires the controller to the factories' informers.
func New(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, df dynamicinformer.DynamicSharedInformerFactory,
	recorder record.EventRecorder, log *slog.Logger) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{client: client, dyn: dyn, queue: worker.NewQueue(Name), recorder: recorder,
		log: log.With("controller", Name), now: time.Now, evented: map[string]string{}}
	c.policies = df.ForResource(report.PoliciesResource).Informer()
	c.reports = df.ForResource(report.ReportsResource).Informer()
	if err := c.reports.AddIndexers(cache.Indexers{byPolicy: func(obj any) ([]string, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if p, ok := u.Object["policy"].(string); ok {
				return []string{p}, nil
			}
		}
		return nil, nil
	}}); err != nil {
		return nil, err
	}
	nodes, leases, revs := f.Core().V1().Nodes(), f.Coordination().V1().Leases(), f.Apps().V1().ControllerRevisions()
	c.nodes, c.leases, c.revs = nodes.Lister(), leases.Lister(), revs.Lister()
	c.synced = []cache.InformerSynced{c.policies.HasSynced, c.reports.HasSynced, nodes.Informer().HasSynced,
		leases.Informer().HasSynced, revs.Informer().HasSynced}

	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	all := func() {
		for _, k := range c.policies.GetStore().ListKeys() {
			c.queue.Add(k)
		}
	}
	if _, err := c.policies.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, err
	}
	reportPolicy := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if p, ok := u.Object["policy"].(string); ok {
				c.queue.Add(p)
			}
		}
	}
	if _, err := c.reports.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: reportPolicy, UpdateFunc: func(_, obj any) { reportPolicy(obj) }, DeleteFunc: reportPolicy,
	}); err != nil {
		return nil, err
	}
	// A node that becomes Ready or not, or changes labels, changes kubelet policies'
	// targets; its status heartbeats do not.
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { all() }, DeleteFunc: func(any) { all() },
		UpdateFunc: func(old, obj any) {
			o, n := old.(*corev1.Node), obj.(*corev1.Node)
			if nodeReady(o) != nodeReady(n) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) {
				all()
			}
		},
	}); err != nil {
		return nil, err
	}
	identity := func(obj any) bool {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		l, ok := obj.(*coordinationv1.Lease)
		return ok && l.Namespace == report.IdentityNamespace && l.Labels[report.ComponentLabel] != ""
	}
	if _, err := leases.Informer().AddEventHandler(cache.FilteringResourceEventHandler{FilterFunc: identity,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { all() }, DeleteFunc: func(any) { all() },
			UpdateFunc: func(old, obj any) {
				// A renewal changes nothing but the renew time; the controller rechecks
				// at expiry (RequeueAfter), so only a new holder or profiles count.
				o, n := old.(*coordinationv1.Lease), obj.(*coordinationv1.Lease)
				if !equality.Semantic.DeepEqual(o.Spec.HolderIdentity, n.Spec.HolderIdentity) ||
					!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) {
					all()
				}
			},
		}}); err != nil {
		return nil, err
	}
	return c, nil
}

// Run rolls up with workers until ctx is done.
func (c *Controller) Run(ctx context.Context, workers int) {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	worker.Run(ctx, Name, c.queue, workers, c.reconcile, c.log)
}

func (c *Controller) policy(key string) (*policyv1alpha1.WasmPolicy, error) {
	obj, ok, err := c.policies.GetStore().GetByKey(key)
	if err != nil || !ok {
		return nil, err
	}
	p := &policyv1alpha1.WasmPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.(*unstructured.Unstructured).Object, p); err != nil {
		return nil, fmt.Errorf("WasmPolicy %s: %w", key, err)
	}
	return p, nil
}

func (c *Controller) reconcile(ctx context.Context, key string) error {
	p, err := c.policy(key)
	if err != nil || p == nil {
		return err
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	revs, err := c.revisions(p)
	if err != nil {
		return err
	}
	if p.Spec.Revision != nil {
		return c.rollback(ctx, p, revs)
	}
	rev, err := c.keepRevision(ctx, p, revs)
	if err != nil {
		return err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	leases, err := c.leases.Leases(report.IdentityNamespace).List(labels.Everything())
	if err != nil {
		return err
	}
	now := c.now()
	targets, next := Targets(p, nodes, leases, now)
	reports, err := c.reportsOn(p.Name)
	if err != nil {
		return err
	}
	plan := Plan(p, targets, reports, now)
	plan.Status.Revision = rev
	c.recordFailures(p, plan.Failures)
	if !equality.Semantic.DeepEqual(plan.Status, p.Status) {
		// The status is this controller's alone (one leader), so it is replaced whole by a
		// JSON patch without a resourceVersion precondition: a burst of reports would
		// otherwise meet a stale informer copy with conflicts, each one a back-off.
		body, err := json.Marshal([]map[string]any{{"op": "add", "path": "/status", "value": plan.Status}})
		if err != nil {
			return err
		}
		_, err = c.dyn.Resource(report.PoliciesResource).Patch(ctx, p.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: Name}, "status")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	if !next.IsZero() {
		return worker.RequeueAfter(next.Sub(now) + time.Second)
	}
	return nil
}

// reportsOn are the reports on the policy, by the component that wrote them.
func (c *Controller) reportsOn(policy string) (map[Target]policyv1alpha1.ComponentStatus, error) {
	objs, err := c.reports.GetIndexer().ByIndex(byPolicy, policy)
	if err != nil {
		return nil, err
	}
	out := make(map[Target]policyv1alpha1.ComponentStatus, len(objs))
	for _, o := range objs {
		r := &policyv1alpha1.WasmPolicyReport{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.(*unstructured.Unstructured).Object, r); err != nil {
			c.log.Warn("unreadable WasmPolicyReport", "report", o.(*unstructured.Unstructured).GetName(), "err", err)
			continue
		}
		out[Target{Component: r.Status.Component, Name: r.Status.Name}] = r.Status
	}
	return out, nil
}

// recordFailures records a Warning Event on the policy for each failure not recorded yet
// (a component's failure is recorded once per generation, reason and message).
func (c *Controller) recordFailures(p *policyv1alpha1.WasmPolicy, failures []policyv1alpha1.ComponentStatus) {
	if c.recorder == nil {
		return
	}
	ref := p.DeepCopy()
	ref.APIVersion, ref.Kind = policyv1alpha1.SchemeGroupVersion.String(), "WasmPolicy"
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range failures {
		k := string(p.UID) + "/" + f.Component + "/" + f.Name
		v := fmt.Sprintf("%d/%s/%s", f.ObservedGeneration, f.Reason, f.Message)
		if c.evented[k] == v {
			continue
		}
		c.evented[k] = v
		c.recorder.Eventf(ref, corev1.EventTypeWarning, EventFailed, "%s %s failed generation %d: %s: %s (the last good revision stays in force)",
			f.Component, f.Name, f.ObservedGeneration, f.Reason, f.Message)
	}
}

// revisions are the policy's ControllerRevisions.
func (c *Controller) revisions(p *policyv1alpha1.WasmPolicy) ([]*appsv1.ControllerRevision, error) {
	sel := labels.SelectorFromSet(labels.Set{PolicyUIDLabel: string(p.UID)})
	revs, err := c.revs.ControllerRevisions(RevisionNamespace).List(sel)
	if err != nil {
		return nil, err
	}
	sort.Slice(revs, func(i, j int) bool { return revs[i].Revision < revs[j].Revision })
	return revs, nil
}

// keepRevision stores the policy's spec as a revision (PlanRevisions) and returns its number.
func (c *Controller) keepRevision(ctx context.Context, p *policyv1alpha1.WasmPolicy, revs []*appsv1.ControllerRevision) (int64, error) {
	data, err := RevisionData(&p.Spec)
	if err != nil {
		return 0, err
	}
	plan := PlanRevisions(p, revs, data)
	api := c.client.AppsV1().ControllerRevisions(RevisionNamespace)
	switch {
	case plan.New:
		_, err = api.Create(ctx, plan.Current, metav1.CreateOptions{FieldManager: Name})
		if apierrors.IsAlreadyExists(err) {
			// Its informer has not seen it yet, or another policy's hash collides:
			// wait for the informer.
			return 0, worker.RequeueAfter(time.Second)
		}
	case plan.Renumber:
		_, err = api.Update(ctx, plan.Current, metav1.UpdateOptions{FieldManager: Name})
	}
	if err != nil {
		return 0, err
	}
	for _, r := range plan.Prune {
		if err := api.Delete(ctx, r.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
	}
	return plan.Current.Revision, nil
}

// rollback replaces the spec with the revision spec.revision names (and clears the
// field); the update is a new generation, which the components load as any other change.
func (c *Controller) rollback(ctx context.Context, p *policyv1alpha1.WasmPolicy, revs []*appsv1.ControllerRevision) error {
	ref := p.DeepCopy()
	ref.APIVersion, ref.Kind = policyv1alpha1.SchemeGroupVersion.String(), "WasmPolicy"
	want := *p.Spec.Revision
	up := p.DeepCopy()
	up.Spec.Revision = nil
	if r := FindRevision(revs, want); r != nil {
		s, err := RevisionSpec(r)
		if err != nil {
			return err
		}
		up.Spec = *s
		up.Spec.Revision = nil
		defer c.event(ref, corev1.EventTypeNormal, EventRolledBack, "rolled back to revision %d", want)
	} else {
		defer c.event(ref, corev1.EventTypeWarning, EventRevisionNotFound, "no revision %d of the policy is kept (wasmkube policy history %s lists them); spec.revision cleared", want, p.Name)
	}
	raw, err := json.Marshal(up)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return err
	}
	_, err = c.dyn.Resource(report.PoliciesResource).Update(ctx, u, metav1.UpdateOptions{FieldManager: Name})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (c *Controller) event(obj runtime.Object, typ, reason, msg string, args ...any) {
	if c.recorder != nil {
		c.recorder.Eventf(obj, typ, reason, msg, args...)
	}
}
