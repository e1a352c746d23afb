// Package wasmpolicy is the WasmPolicy controller: it resolves each policy's image tag to
// a digest once per generation (the one every component fetches), rolls the components'
// reports (WasmPolicyReports, plugins/wasmpolicy/report) up into each policy's status (one
// entry per live targeted component, Ready n/m, Degraded, observedGeneration), releases an
// AllOrNothing rollout once every target has it staged, records an Event on the policy for
// each component's failure, keeps each spec as a ControllerRevision (the last
// HistoryLimit), and rolls a policy back when spec.revision asks for it. Decisions are pure
// (PlanResolution, Targets, Plan, PlanRevisions); this file does the I/O.
// docs/wasmpolicy.md, docs/wasmpolicy-status.md.
package wasmpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
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
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	policyload "github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// Name is the controller's name in logs, metrics and Events.
const Name = "wasmpolicy-controller"

// Event reasons on a WasmPolicy.
const (
	EventFailed           = "PolicyFailed"
	EventRolledBack       = "RolledBack"
	EventRevisionNotFound = "RollbackRevisionNotFound"
	EventResolveFailed    = "ResolveFailed"
	EventResolved         = "Resolved"
	EventReleased         = "Released"
)

// Options configure how the controller resolves module tags.
type Options struct {
	// InsecureRegistries may be reached over plain HTTP (loopback registries always may;
	// wasmoci.Options.Insecure).
	InsecureRegistries []string
	// Transport is the HTTP transport under go-containerregistry's (nil: its default,
	// system roots, TLS verified).
	Transport http.RoundTripper
	// ResolveRetry is how long after a failed resolution it is tried again (default
	// DefaultResolveRetry).
	ResolveRetry time.Duration
}

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
	opts     Options

	mu       sync.Mutex
	evented  map[string]string // policy uid/component/name -> the failure last recorded as an Event
	resolved map[types.UID]lastResolution
}

// New wires the controller to the factories' informers.
func New(client kubernetes.Interface, dyn dynamic.Interface, f informers.SharedInformerFactory, df dynamicinformer.DynamicSharedInformerFactory,
	recorder record.EventRecorder, log *slog.Logger, opts Options) (*Controller, error) {
	if log == nil {
		log = slog.Default()
	}
	if opts.ResolveRetry <= 0 {
		opts.ResolveRetry = DefaultResolveRetry
	}
	c := &Controller{client: client, dyn: dyn, queue: worker.NewQueue(Name), recorder: recorder,
		log: log.With("controller", Name), now: time.Now, evented: map[string]string{}, resolved: map[types.UID]lastResolution{}, opts: opts}
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
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: func(obj any) { c.forget(obj); enqueue(obj) },
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
	was := p.Status.DeepCopy() // what is written, before the resolution changes p
	now := c.now()
	resolveErr := c.resolution(ctx, p, now)
	targets, next := Targets(p, nodes, leases, now)
	reports, refs, err := c.reportsOn(p.Name)
	if err != nil {
		return err
	}
	if n, err := c.collectOrphans(ctx, refs, nodes, leases, now); err != nil {
		return err
	} else if !n.IsZero() && (next.IsZero() || n.Before(next)) {
		next = n
	}
	released := p.Status.ReleasedGeneration
	plan := Plan(p, targets, reports, now)
	plan.Status.Revision = rev
	if resolveErr != nil {
		ResolveFailed(&plan.Status, p, resolveErr, now)
		c.recordOnce(p, "resolve", fmt.Sprintf("%d/%v", p.Generation, resolveErr), EventResolveFailed,
			"module image %s could not be resolved to a digest for generation %d: %v", p.Spec.Module.Image, p.Generation, resolveErr)
		if next.IsZero() || now.Add(c.opts.ResolveRetry).Before(next) {
			next = now.Add(c.opts.ResolveRetry)
		}
	}
	if r := plan.Status.ReleasedGeneration; r != released {
		c.event(c.ref(p), corev1.EventTypeNormal, EventReleased, "generation %d released: all %d targeted components have it staged and switch to it now (rollout AllOrNothing)",
			r, plan.Status.TargetedComponents)
	}
	c.recordFailures(p, plan.Failures)
	if !equality.Semantic.DeepEqual(plan.Status, *was) {
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

// reportsOn are the reports on the policy, by the component that wrote them, and the same
// reports by name (for Orphans).
func (c *Controller) reportsOn(policy string) (map[Target]policyv1alpha1.ComponentStatus, []ReportRef, error) {
	objs, err := c.reports.GetIndexer().ByIndex(byPolicy, policy)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[Target]policyv1alpha1.ComponentStatus, len(objs))
	refs := make([]ReportRef, 0, len(objs))
	for _, o := range objs {
		u := o.(*unstructured.Unstructured)
		r := &policyv1alpha1.WasmPolicyReport{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
			c.log.Warn("unreadable WasmPolicyReport", "report", u.GetName(), "err", err)
			continue
		}
		t := Target{Component: r.Status.Component, Name: r.Status.Name}
		out[t] = r.Status
		refs = append(refs, ReportRef{Name: u.GetName(), Target: t, Created: u.GetCreationTimestamp().Time})
	}
	return out, refs, nil
}

// collectOrphans deletes the reports whose component is gone (Orphans) and returns when
// to look again.
func (c *Controller) collectOrphans(ctx context.Context, refs []ReportRef, nodes []*corev1.Node, leases []*coordinationv1.Lease, now time.Time) (time.Time, error) {
	orphans, next := Orphans(refs, nodes, leases, now)
	for _, name := range orphans {
		err := c.dyn.Resource(report.ReportsResource).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return time.Time{}, err
		}
		c.log.Info("deleted the report of a component that is gone", "report", name)
	}
	return next, nil
}

// recordFailures records a Warning Event on the policy for each failure not recorded yet
// (a component's failure is recorded once per generation, reason and message).
func (c *Controller) recordFailures(p *policyv1alpha1.WasmPolicy, failures []policyv1alpha1.ComponentStatus) {
	for _, f := range failures {
		c.recordOnce(p, f.Component+"/"+f.Name, fmt.Sprintf("%d/%s/%s", f.ObservedGeneration, f.Reason, f.Message), EventFailed,
			"%s %s failed generation %d: %s: %s (the last good revision stays in force)", f.Component, f.Name, f.ObservedGeneration, f.Reason, f.Message)
	}
}

// recordOnce records a Warning Event on the policy unless the same value of what was the
// last one recorded for it.
func (c *Controller) recordOnce(p *policyv1alpha1.WasmPolicy, what, value, reason, msg string, args ...any) {
	if c.recorder == nil {
		return
	}
	k := string(p.UID) + "/" + what
	c.mu.Lock()
	if c.evented[k] == value {
		c.mu.Unlock()
		return
	}
	c.evented[k] = value
	c.mu.Unlock()
	c.recorder.Eventf(c.ref(p), corev1.EventTypeWarning, reason, msg, args...)
}

// forget drops what the controller remembers of a deleted policy (its Events recorded,
// its last resolution).
func (c *Controller) forget(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	uid := u.GetUID()
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.resolved, uid)
	for k := range c.evented {
		if strings.HasPrefix(k, string(uid)+"/") {
			delete(c.evented, k)
		}
	}
}

// ref is p as an Event's object.
func (c *Controller) ref(p *policyv1alpha1.WasmPolicy) *policyv1alpha1.WasmPolicy {
	ref := p.DeepCopy()
	ref.APIVersion, ref.Kind = policyv1alpha1.SchemeGroupVersion.String(), "WasmPolicy"
	return ref
}

// lastResolution is the controller's own memory of a policy's last resolution: the
// informer may still hold the policy without the status just written (another event
// reconciles it first), and a failed one is not asked again before ResolveRetry.
type lastResolution struct {
	generation    int64
	image, digest string
	err           error
	at            time.Time
}

// resolution records in p's status the digest of its image for its generation
// (PlanResolution), asking the registry when it must; it returns the registry's error.
func (c *Controller) resolution(ctx context.Context, p *policyv1alpha1.WasmPolicy, now time.Time) error {
	c.mu.Lock()
	last, ok := c.resolved[p.UID]
	c.mu.Unlock()
	if ok && last.generation == p.Generation && last.image == p.Spec.Module.Image {
		if last.err == nil && p.Status.ResolvedGeneration != p.Generation {
			Resolved(p, last.digest) // written already; the informer has not seen it yet
		}
		if last.err != nil && now.Sub(last.at) < c.opts.ResolveRetry {
			return last.err
		}
	}
	res := PlanResolution(p)
	switch {
	case res.Record:
		Resolved(p, res.Digest)
	case res.Ask:
		d, err := c.resolve(ctx, p)
		c.mu.Lock()
		c.resolved[p.UID] = lastResolution{generation: p.Generation, image: p.Spec.Module.Image, digest: d, err: err, at: now}
		c.mu.Unlock()
		if err != nil {
			return err
		}
		Resolved(p, d)
		c.event(c.ref(p), corev1.EventTypeNormal, EventResolved, "module image %s resolved to %s for generation %d; every component fetches that digest",
			p.Spec.Module.Image, d, p.Generation)
	}
	return nil
}

// resolve asks the registry which manifest p's image tag names, with the credentials of
// its imagePullSecrets.
func (c *Controller) resolve(ctx context.Context, p *policyv1alpha1.WasmPolicy) (string, error) {
	o := wasmoci.Options{Insecure: c.opts.InsecureRegistries, Transport: c.opts.Transport}
	if refs := p.Spec.Module.ImagePullSecrets; len(refs) > 0 {
		kc, err := policyload.PullSecretsKeychain(ctx, c.client, refs)
		if err != nil {
			return "", err
		}
		o.Keychain = kc
	}
	d, err := wasmoci.NewResolver(o).Resolve(ctx, p.Spec.Module.Image)
	if err != nil {
		return "", err
	}
	return d.DigestStr(), nil
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
