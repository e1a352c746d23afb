package wasmpolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// Resource is the WasmPolicy resource the loader watches.
var Resource = policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")

// Reasons of a Failed phase.
const (
	ReasonFetchFailed = "FetchFailed"  // the module could not be read or pulled, or its sha256 differs
	ReasonLoadFailed  = "LoadFailed"   // compile, ABI check, settings (wasmkube_init) or smoke call failed
	ReasonConflict    = "NameConflict" // the file tier declares a policy of that name
	ReasonInvalid     = "Invalid"      // the spec cannot be mapped onto the component's kind
)

// ReasonAwaitingDigest: Pending until the wasmpolicy controller has resolved the image's
// tag for the current generation (status.resolvedGeneration).
const ReasonAwaitingDigest = "AwaitingDigest"

// Config configures a Loader.
type Config struct {
	// Component is ComponentAPIServer, ComponentScheduler or ComponentKubelet; Name is the
	// instance (the API server's identity, the scheduler's, the node's name).
	Component, Name string
	// Dynamic watches WasmPolicies; Client reads imagePullSecrets and, for a kubelet, its
	// Node.
	Dynamic dynamic.Interface
	Client  kubernetes.Interface
	// Target is the component's swap path.
	Target Target
	// Cache is the module cache's options (Dir, Insecure, Transport); an empty Dir allows
	// file modules only.
	Cache wasmoci.Options
	// SchedulerNames returns the profiles a scheduler runs (scheduler only).
	SchedulerNames func() []string
	// Resync, when set, reconciles that often besides on events: for what the informers do
	// not see change (a scheduler's profiles after a config file reload). A reconcile in
	// which nothing changed touches neither the target nor the sink.
	Resync time.Duration
	// Sink receives each phase change; nil: NopSink.
	Sink StatusSink
	// RetryInterval is when a failed fetch is tried again (default 30s); a failed load is
	// not: it waits for the next change of the policy.
	RetryInterval time.Duration
	Logger        *slog.Logger
}

// Loader keeps a component's API tier in step with the WasmPolicies that target it: an
// informer on the policies (and, for a kubelet, on its Node), a selection (Placement), the
// module fetched (file or registry, by digest), and the set handed to the Target, each
// phase reported to the Sink.
type Loader struct {
	cfg     Config
	log     *slog.Logger
	fetch   *fetcher
	kick    chan struct{}
	store   cache.Store
	nodeLbl map[string]string
	nodeOK  bool

	mu    sync.Mutex
	state map[string]*policyState // by policy name
	// applied: the target was given a set; inForce is what that left in force per policy
	// (a failed revision's last good one), staged the Key held per policy by a Stager.
	applied bool
	inForce map[string]*Policy
	staged  map[string]string
	synced  chan struct{}
	once    sync.Once
}

// policyState is what the loader knows of one selected policy.
type policyState struct {
	uid        types.UID
	generation int64
	// cur is the fetched revision of the current generation (nil: not fetched yet, or the
	// fetch failed: fetchErr, tried again after RetryInterval); loadErr the target's error
	// for cur, which waits for the next change of the policy. good is the revision last
	// put in force: what the target keeps while cur fails (and while cur is held out of
	// force, Staged, for an AllOrNothing release).
	cur       *Policy
	fetchErr  error
	fetchedAt time.Time
	loadErr   error
	good      *Policy
	reported  policyv1alpha1.ComponentStatus
}

// New returns a Loader; Run starts it.
func New(cfg Config) (*Loader, error) {
	if cfg.Target == nil || cfg.Dynamic == nil {
		return nil, errors.New("wasmpolicy: Config.Target and Config.Dynamic are required")
	}
	if cfg.Sink == nil {
		cfg.Sink = NopSink{}
	}
	if cfg.RetryInterval <= 0 {
		cfg.RetryInterval = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f, err := newFetcher(cfg.Cache, cfg.Client)
	if err != nil {
		return nil, err
	}
	return &Loader{cfg: cfg, log: cfg.Logger.With("component", cfg.Component, "tier", TierAPI), fetch: f,
		kick: make(chan struct{}, 1), state: map[string]*policyState{}, inForce: map[string]*Policy{}, staged: map[string]string{},
		synced: make(chan struct{})}, nil
}

// Trigger asks for a reconcile (the scheduler's profiles changed, say).
func (l *Loader) Trigger() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Synced is closed once the first reconcile after the informers' sync has applied.
func (l *Loader) Synced() <-chan struct{} { return l.synced }

// Run watches and reconciles until ctx ends.
func (l *Loader) Run(ctx context.Context) {
	trigger := func(any) { l.Trigger() }
	df := dynamicinformer.NewDynamicSharedInformerFactory(l.cfg.Dynamic, 0)
	inf := df.ForResource(Resource).Informer()
	// The loader reads a policy's spec and the few status fields the controller writes for
	// it; the roll-up (status.components, one entry per target, conditions) is rewritten
	// several times per change and is neither kept nor a reason to reconcile.
	if err := inf.SetTransform(withoutRollup); err != nil {
		l.log.Error("wasmpolicy: informer", "err", err)
		return
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: trigger, DeleteFunc: trigger,
		UpdateFunc: func(old, obj any) {
			if loaderSees(old, obj) {
				l.Trigger()
			}
		}}); err != nil {
		l.log.Error("wasmpolicy: informer", "err", err)
		return
	}
	l.store = inf.GetStore()
	df.Start(ctx.Done())
	syncs := []cache.InformerSynced{inf.HasSynced}
	var nodes cache.Store
	if l.cfg.Component == ComponentKubelet && l.cfg.Client != nil {
		nf := informers.NewSharedInformerFactoryWithOptions(l.cfg.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", l.cfg.Name).String()
		}))
		ni := nf.Core().V1().Nodes().Informer()
		// Only its labels select policies; its status heartbeats change nothing here.
		if _, err := ni.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: trigger, DeleteFunc: trigger,
			UpdateFunc: func(old, obj any) {
				o, ok1 := old.(*corev1.Node)
				n, ok2 := obj.(*corev1.Node)
				if !ok1 || !ok2 || !maps.Equal(o.Labels, n.Labels) {
					l.Trigger()
				}
			}}); err != nil {
			l.log.Error("wasmpolicy: node informer", "err", err)
			return
		}
		nodes = ni.GetStore()
		nf.Start(ctx.Done())
		syncs = append(syncs, ni.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	var resync <-chan time.Time
	if l.cfg.Resync > 0 {
		t := time.NewTicker(l.cfg.Resync)
		defer t.Stop()
		resync = t.C
	}
	l.Trigger()
	for {
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-l.kick:
		case <-retry.C:
		case <-resync:
		}
		if nodes != nil {
			l.nodeLbl, l.nodeOK = nil, false
			if obj, ok, _ := nodes.GetByKey(l.cfg.Name); ok {
				if n, ok := obj.(*corev1.Node); ok {
					l.nodeLbl, l.nodeOK = n.Labels, true
					if l.nodeLbl == nil {
						l.nodeLbl = map[string]string{}
					}
				}
			}
		}
		if l.reconcile(ctx) {
			retry.Reset(l.cfg.RetryInterval)
		}
		l.once.Do(func() { close(l.synced) })
	}
}

// rollupFields are the parts of a WasmPolicy's status the loader never reads.
var rollupFields = []string{"components", "conditions"}

// withoutRollup is the policy informer's transform: it drops the roll-up's part of the
// status and the managed fields from the stored copy (in place, as client-go allows).
func withoutRollup(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	if st, ok := u.Object["status"].(map[string]any); ok {
		for _, f := range rollupFields {
			delete(st, f)
		}
	}
	u.SetManagedFields(nil)
	return u, nil
}

// loadedFrom are the status fields a component acts on (ModuleRef, Held).
var loadedFrom = []string{"digest", "resolvedGeneration", "resolvedImage", "releasedGeneration"}

// loaderSees reports whether an update of a policy can change what the loader does: its
// generation (every spec change), or the digest resolved for it or its release. The
// roll-up's other writes (counts, the observed generation) are not.
func loaderSees(old, obj any) bool {
	o, ok1 := old.(*unstructured.Unstructured)
	n, ok2 := obj.(*unstructured.Unstructured)
	if !ok1 || !ok2 || o.GetUID() != n.GetUID() || o.GetGeneration() != n.GetGeneration() {
		return true
	}
	for _, f := range loadedFrom {
		a, _, _ := unstructured.NestedFieldNoCopy(o.Object, "status", f)
		b, _, _ := unstructured.NestedFieldNoCopy(n.Object, "status", f)
		if !reflect.DeepEqual(a, b) {
			return true
		}
	}
	return false
}

// policies lists the WasmPolicies from the informer's store, defaulted.
func (l *Loader) policies() []*policyv1alpha1.WasmPolicy {
	var out []*policyv1alpha1.WasmPolicy
	for _, obj := range l.store.List() {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		p := &policyv1alpha1.WasmPolicy{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
			l.log.Warn("wasmpolicy: cannot read a WasmPolicy", "name", u.GetName(), "err", err)
			continue
		}
		policyv1alpha1.SetDefaults(p)
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (l *Loader) placement() Placement {
	pl := Placement{Component: l.cfg.Component}
	if l.cfg.SchedulerNames != nil {
		pl.SchedulerNames = l.cfg.SchedulerNames()
	}
	if l.nodeOK {
		pl.NodeLabels = l.nodeLbl
	}
	return pl
}

// reconcile brings the target's API tier in step with the policies; it reports whether a
// fetch failed (and should be retried).
func (l *Loader) reconcile(ctx context.Context) (retry bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl := l.placement()
	seen := map[string]bool{}
	var set, stage []*Policy
	for _, obj := range l.policies() {
		if !pl.Selects(obj) {
			continue
		}
		seen[obj.Name] = true
		st := l.state[obj.Name]
		if st == nil || st.uid != obj.UID {
			st = &policyState{uid: obj.UID} // new, or deleted and created again: its old revision goes
			l.state[obj.Name] = st
		}
		if st.generation != obj.Generation {
			st.generation = obj.Generation
			st.cur, st.fetchErr, st.loadErr, st.fetchedAt = nil, nil, nil, time.Time{}
			l.observe(obj.Name, st, policyv1alpha1.PhasePending, "", "", "")
		}
		if st.cur == nil && (st.fetchErr == nil || time.Since(st.fetchedAt) >= l.cfg.RetryInterval) {
			if ref, ok := ModuleRef(obj); ok {
				l.fetchOne(ctx, obj, st, ref)
			} else {
				l.observe(obj.Name, st, policyv1alpha1.PhasePending, "", ReasonAwaitingDigest,
					fmt.Sprintf("waiting for the wasmpolicy controller to resolve %s to a digest for generation %d (status.resolvedGeneration)", obj.Spec.Module.Image, obj.Generation))
			}
		}
		if st.fetchErr != nil {
			retry = true
		}
		held := Held(obj)
		switch {
		case st.cur != nil && st.loadErr == nil && !held:
			set = append(set, st.cur)
		case st.good != nil:
			set = append(set, st.good)
		}
		if st.cur != nil && st.loadErr == nil && held {
			stage = append(stage, st.cur)
		}
	}
	for name := range l.state {
		if !seen[name] {
			delete(l.state, name)
		}
	}
	// Apply first, so that a release takes the load held for it before staging lets go of
	// what it no longer lists.
	if !l.applied || !samePolicies(set, l.inForce) {
		l.apply(set)
	}
	l.stage(stage)
	return retry
}

// apply hands set to the target and reports each current revision Active or Failed.
func (l *Loader) apply(set []*Policy) {
	errs := l.cfg.Target.ApplyPolicies(set)
	l.applied = true
	l.inForce = map[string]*Policy{}
	for _, p := range set {
		st := l.state[p.Name]
		err := errs[p.Name]
		if p != st.cur {
			// The last good revision, kept while the current one fails or is held.
			l.inForce[p.Name] = p
			continue
		}
		if err != nil {
			st.loadErr = err
			if st.good != nil {
				l.inForce[p.Name] = st.good // the target kept it
			}
			l.log.Warn("policy not loaded; the revision in force stays", "policy", p.Name, "generation", p.Generation, "err", err)
			l.observe(p.Name, st, policyv1alpha1.PhaseFailed, p.Digest, reasonOf(err), err.Error())
			continue
		}
		l.inForce[p.Name] = p
		st.good = p
		l.observe(p.Name, st, policyv1alpha1.PhaseActive, p.Digest, "", fmt.Sprintf("in force in %s mode", modeOf(p)))
	}
}

// stage has the target hold the policies of an AllOrNothing rollout that are not released
// yet, and reports each Staged or Failed. The target is asked only when the list changed.
func (l *Loader) stage(stage []*Policy) {
	keys := make(map[string]string, len(stage))
	for _, p := range stage {
		keys[p.Name] = p.Key()
	}
	var errs map[string]error
	if stager, ok := l.cfg.Target.(Stager); ok && !maps.Equal(keys, l.staged) {
		errs = stager.StagePolicies(stage)
	}
	for _, p := range stage {
		st := l.state[p.Name]
		if err := errs[p.Name]; err != nil {
			st.loadErr = err
			delete(keys, p.Name)
			l.log.Warn("policy not staged; no component of the rollout switches to it", "policy", p.Name, "generation", p.Generation, "err", err)
			l.observe(p.Name, st, policyv1alpha1.PhaseFailed, p.Digest, reasonOf(err), err.Error())
			continue
		}
		l.observe(p.Name, st, policyv1alpha1.PhaseStaged, p.Digest, "",
			fmt.Sprintf("loaded, held out of force until every targeted component has it (rollout %s); to run in %s mode", policyv1alpha1.RolloutAllOrNothing, modeOf(p)))
	}
	l.staged = keys
}

// samePolicies reports whether set is exactly what is in force.
func samePolicies(set []*Policy, inForce map[string]*Policy) bool {
	if len(set) != len(inForce) {
		return false
	}
	for _, p := range set {
		if inForce[p.Name] != p {
			return false
		}
	}
	return true
}

func modeOf(p *Policy) policyv1alpha1.Mode {
	if p.Spec.Mode == "" {
		return policyv1alpha1.ModeEnforce
	}
	return p.Spec.Mode
}

// fetchOne fetches obj's module (by ref, ModuleRef) into st.cur, reporting a failure.
func (l *Loader) fetchOne(ctx context.Context, obj *policyv1alpha1.WasmPolicy, st *policyState, ref string) {
	l.observe(obj.Name, st, policyv1alpha1.PhaseFetching, "", "", "")
	mod, digest, err := l.fetch.fetch(ctx, obj, ref)
	st.fetchedAt, st.fetchErr = time.Now(), err
	if err != nil {
		l.log.Warn("policy module not fetched; the revision in force stays", "policy", obj.Name, "generation", obj.Generation, "err", err)
		l.observe(obj.Name, st, policyv1alpha1.PhaseFailed, "", ReasonFetchFailed, err.Error())
		return
	}
	st.cur = &Policy{Name: obj.Name, Generation: obj.Generation, Spec: *obj.Spec.DeepCopy(), Module: mod, Digest: digest}
}

// reasonOf names a load error's cause by its type.
func reasonOf(err error) string {
	var ce *ConflictError
	var fe *FetchError
	var le *wasmhost.LoadError
	var ie *InvalidError
	switch {
	case errors.As(err, &ce):
		return ReasonConflict
	case errors.As(err, &fe):
		return ReasonFetchFailed
	case errors.As(err, &ie):
		return ReasonInvalid
	case errors.As(err, &le):
		return ReasonLoadFailed
	}
	return ReasonLoadFailed
}

// observe reports the policy's status to the sink when it changed.
func (l *Loader) observe(policy string, st *policyState, phase policyv1alpha1.Phase, digest, reason, msg string) {
	s := policyv1alpha1.ComponentStatus{Name: l.cfg.Name, Component: l.cfg.Component, ObservedGeneration: st.generation,
		Digest: digest, Phase: phase, Reason: reason, Message: msg}
	if st.good != nil {
		// The mode of the revision in force here: the one just applied when Active, the
		// last good one while a newer fails or is fetched.
		s.Mode = policyv1alpha1.ModeEnforce
		if st.good.Monitor() {
			s.Mode = policyv1alpha1.ModeMonitor
		}
	}
	prev := st.reported
	prev.LastTransitionTime = metav1.Time{}
	if prev == s {
		return
	}
	s.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	if prev.Phase == s.Phase && !st.reported.LastTransitionTime.IsZero() {
		s.LastTransitionTime = st.reported.LastTransitionTime
	}
	st.reported = s
	l.cfg.Sink.Observe(policy, s)
}

// InvalidError: a policy's spec cannot be mapped onto the component's kind (a target's
// own check that the API's validation did not make).
type InvalidError struct {
	Policy, Field, Msg string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("policy %s: %s: %s", e.Policy, e.Field, e.Msg)
}
