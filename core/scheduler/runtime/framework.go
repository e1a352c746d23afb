// Package runtime runs one scheduler profile's plugins: it resolves the profile against
// the plugin registry, then drives a pod through PreFilter, Filter (in parallel over
// nodes, in chunks, stopping once enough feasible nodes are found), PreScore, Score
// (+NormalizeScore and weights), host selection, and the binding-cycle extension points.
// Native and wasm plugins are the same to it: it sees only framework interfaces, and it
// prefers the batch forms of Filter and Score when a plugin offers them.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Metrics receives durations; the scheduler implements it with Prometheus.
type Metrics interface {
	// ObservePlugin records one plugin's time at an extension point (sampled cycles only).
	ObservePlugin(point, plugin string, code framework.Code, d time.Duration)
	// ObservePoint records the time of a whole extension point.
	ObservePoint(profile, point string, code framework.Code, d time.Duration)
}

// Options are what a profile's runtime needs besides the registry and the profile.
type Options struct {
	// Client is handed to plugins (binding, preemption); nil in pure unit tests.
	Client kubernetes.Interface
	// Lister is the scheduler's snapshot, updated in place before every cycle.
	Lister framework.NodeInfoLister
	// Nominator knows pods nominated by preemption (optional).
	Nominator framework.PodNominator
	// Parallelism is the configured worker count (the runtime uses at most GOMAXPROCS
	// of them, since Filter and Score are CPU bound).
	Parallelism int
	// PercentageOfNodesToScore: 0 is adaptive.
	PercentageOfNodesToScore int32
	// ExplainTopNodes is how many of the best nodes an Explanation lists (0: none).
	ExplainTopNodes int
	// RecordNodes > 0 makes each Explanation carry a Capture for the decision explorer
	// (record.go) with at most that many feasible and that many rejected nodes.
	RecordNodes int
	// RecordWhole, when set, is asked once per scheduled cycle whether its Capture copies
	// the node matrix (the record's sampling under load, explorer.Ring.WantWhole); the
	// others capture a summary. nil: every cycle copies it.
	RecordWhole func() bool
	// Metrics (optional).
	Metrics Metrics
	// InformerFactory is the scheduler's (optional): plugins may take listers from it
	// in their factory; the scheduler starts the informers they asked for.
	InformerFactory informers.SharedInformerFactory
	// KeepTotals makes SchedulePod return every feasible node's total score, so that a
	// caller comparing decisions can tell a tie from a different choice (plugin replay).
	KeepTotals bool
	// MonitorScores are Score plugins in Monitor mode: run beside the profile's, never
	// deciding (monitor.go).
	MonitorScores []MonitorScore
	// Batching places a pod from the ranking of the last full pass when its signature
	// equals that pass's pod's (batch.go; the profile's `batching`).
	Batching bool
}

type scorePlugin struct {
	p      framework.ScorePlugin
	batch  framework.BatchScorePlugin
	weight int64
}

type filterPlugin struct {
	p     framework.FilterPlugin
	batch framework.BatchFilterPlugin
}

// Framework is one profile's plugins, ready to run. A Framework runs one scheduling
// cycle at a time (the scheduler's loop is sequential); binding-cycle methods may run
// concurrently with it.
type Framework struct {
	profile    string
	opts       Options
	workers    int
	plugins    map[string]framework.Plugin
	pointNames map[string][]config.Plugin

	preFilter  []framework.PreFilterPlugin
	filter     []filterPlugin
	postFilter []framework.PostFilterPlugin
	preScore   []framework.PreScorePlugin
	score      []scorePlugin
	reserve    []framework.ReservePlugin
	permit     []framework.PermitPlugin
	preBind    []framework.PreBindPlugin
	bind       []framework.BindPlugin
	postBind   []framework.PostBindPlugin
	// monitors are the MonitorScores; monitorPlugins every plugin they built (closed too).
	monitors       []monitorScore
	monitorPlugins []framework.Plugin

	// waiting are the pods held at Permit; events the plugins' queueing registrations.
	waiting waitingPods
	events  map[string][]framework.ClusterEventWithHint

	nextStartNodeIndex int
	cycles             atomic.Int64
	// buffers reused between cycles (one cycle at a time)
	scoreBuf []framework.NodeScoreList
	totalBuf []int64

	// signers sign pods; batch is the ranking kept for the next pod of equal signature
	// (batch.go), keepRaw asks runScore to save raw scores in rawBuf for it.
	signers signers
	batch   *batch
	keepRaw rawUse
	rawBuf  [][]int64
	// cols are the decision records' matrix columns (record.go), built at the first
	// capture; whole: this cycle's record copies its matrix (Options.RecordWhole).
	cols  *recordColumns
	whole bool
}

// rawUse says which raw scores runScore keeps in rawBuf, and for whom.
type rawUse int8

const (
	rawNone      rawUse = iota
	rawForRecord        // the decision record: the scores of the plugins that normalize
	rawForBatch         // a batch (batch.go): every plugin's
)

var (
	_ framework.PreemptionHandle = (*Framework)(nil)
	_ framework.InformerHandle   = (*Framework)(nil)
)

// New resolves profile against registry and builds its plugins. Each plugin is built
// once per profile (with its pluginConfig args) and shared by the extension points it
// serves. An unknown plugin name, a plugin enabled at a point it does not implement, or
// a factory error fails New with an error that names the plugin.
func New(ctx context.Context, registry framework.Registry, profile *config.Profile, opts Options) (*Framework, error) {
	f := &Framework{profile: profile.SchedulerName, opts: opts, plugins: map[string]framework.Plugin{}}
	f.recordTimings()
	f.workers = max(1, min(opts.Parallelism, goruntime.GOMAXPROCS(0)))
	if opts.Parallelism <= 0 {
		f.workers = goruntime.GOMAXPROCS(0)
	}
	var buildErr error
	instance := func(name string) framework.Plugin {
		if p, ok := f.plugins[name]; ok {
			return p
		}
		factory, ok := registry[name]
		if !ok {
			return nil
		}
		p, err := factory(ctx, profile.Args(name), f)
		if err != nil {
			if buildErr == nil {
				buildErr = fmt.Errorf("profile %q: plugin %q: %w", profile.SchedulerName, name, err)
			}
			return nil
		}
		f.plugins[name] = p
		return p
	}
	known := func(name string) bool { _, ok := registry[name]; return ok }
	implements := func(name, point string) bool {
		p := instance(name)
		return p != nil && Implements(p, point)
	}
	points, err := profile.Resolve(known, implements)
	if buildErr != nil {
		return nil, buildErr
	}
	if err != nil {
		return nil, err
	}
	f.pointNames = points
	for _, point := range config.ExtensionPoints {
		for _, e := range points[point] {
			p := instance(e.Name)
			if buildErr != nil {
				return nil, buildErr
			}
			if p == nil {
				return nil, &config.Error{Field: "scheduler.profiles[" + profile.SchedulerName + "].plugins." + config.JSONKey(point), Msg: fmt.Sprintf("unknown plugin %q", e.Name)}
			}
			if !Implements(p, point) {
				// A default plugin replaced by a registry entry of another kind.
				return nil, &config.Error{Field: "scheduler.profiles[" + profile.SchedulerName + "].plugins." + config.JSONKey(point), Msg: fmt.Sprintf("plugin %q does not implement %s", e.Name, point)}
			}
			f.add(point, p, int64(e.Weight))
		}
	}
	if err := f.registerEvents(ctx); err != nil {
		return nil, err
	}
	f.buildSigners()
	if err := f.newMonitors(ctx, opts.MonitorScores); err != nil {
		_ = f.Close()
		return nil, err
	}
	if len(f.bind) == 0 {
		return nil, &config.Error{Field: "scheduler.profiles[" + profile.SchedulerName + "].plugins.bind", Msg: "at least one Bind plugin is required"}
	}
	return f, nil
}

// extensionPoints is the one table of the extension points: how the runtime tells that a
// plugin implements one, and where it keeps the plugins of each.
var extensionPoints = map[string]struct {
	is  func(framework.Plugin) bool
	add func(f *Framework, p framework.Plugin, weight int64)
}{
	config.PreFilter: {is[framework.PreFilterPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.preFilter = append(f.preFilter, p.(framework.PreFilterPlugin))
	}},
	config.Filter: {is[framework.FilterPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		fp := filterPlugin{p: p.(framework.FilterPlugin)}
		fp.batch, _ = p.(framework.BatchFilterPlugin)
		f.filter = append(f.filter, fp)
	}},
	config.PostFilter: {is[framework.PostFilterPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.postFilter = append(f.postFilter, p.(framework.PostFilterPlugin))
	}},
	config.PreScore: {is[framework.PreScorePlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.preScore = append(f.preScore, p.(framework.PreScorePlugin))
	}},
	config.Score: {is[framework.ScorePlugin], func(f *Framework, p framework.Plugin, w int64) {
		sp := scorePlugin{p: p.(framework.ScorePlugin), weight: w}
		sp.batch, _ = p.(framework.BatchScorePlugin)
		f.score = append(f.score, sp)
	}},
	config.Reserve: {is[framework.ReservePlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.reserve = append(f.reserve, p.(framework.ReservePlugin))
	}},
	config.Permit: {is[framework.PermitPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.permit = append(f.permit, p.(framework.PermitPlugin))
	}},
	config.PreBind: {is[framework.PreBindPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.preBind = append(f.preBind, p.(framework.PreBindPlugin))
	}},
	config.Bind: {is[framework.BindPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.bind = append(f.bind, p.(framework.BindPlugin))
	}},
	config.PostBind: {is[framework.PostBindPlugin], func(f *Framework, p framework.Plugin, _ int64) {
		f.postBind = append(f.postBind, p.(framework.PostBindPlugin))
	}},
}

func is[T any](p framework.Plugin) bool { _, ok := p.(T); return ok }

// Implements reports whether p implements the extension point: it has the point's
// methods and, if it is a framework.PointSelector, says it serves the point.
func Implements(p framework.Plugin, point string) bool {
	e, ok := extensionPoints[point]
	if !ok || !e.is(p) {
		return false
	}
	if s, ok := p.(framework.PointSelector); ok {
		return s.ServesPoint(point)
	}
	return true
}

func (f *Framework) add(point string, p framework.Plugin, weight int64) {
	extensionPoints[point].add(f, p, weight)
}

// Close closes the profile's plugins that hold resources (framework.Closer). Call it once
// no cycle uses the framework any more.
func (f *Framework) Close() error {
	var errs []error
	for name, p := range f.plugins {
		if c, ok := p.(framework.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("plugin %s: %w", name, err))
			}
		}
	}
	for _, p := range f.monitorPlugins {
		if c, ok := p.(framework.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("monitor plugin %s: %w", p.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// ProfileName is the profile's schedulerName.
func (f *Framework) ProfileName() string { return f.profile }

// Plugin returns the profile's instance of a plugin, or nil.
func (f *Framework) Plugin(name string) framework.Plugin { return f.plugins[name] }

// PluginsAt lists the plugins of an extension point with their weights, in order.
func (f *Framework) PluginsAt(point string) []config.Plugin { return f.pointNames[point] }

// HasPostFilter reports whether the profile has PostFilter plugins.
func (f *Framework) HasPostFilter() bool { return len(f.postFilter) > 0 }

// SnapshotSharedLister implements framework.Handle.
func (f *Framework) SnapshotSharedLister() framework.NodeInfoLister { return f.opts.Lister }

// ClientSet implements framework.Handle.
func (f *Framework) ClientSet() kubernetes.Interface { return f.opts.Client }

// SharedInformerFactory implements framework.InformerHandle.
func (f *Framework) SharedInformerFactory() informers.SharedInformerFactory {
	return f.opts.InformerFactory
}

// Parallelism implements framework.Handle.
func (f *Framework) Parallelism() int { return f.workers }

// NominatedPodsForNode implements framework.PodNominator.
func (f *Framework) NominatedPodsForNode(name string) []*framework.PodInfo {
	if f.opts.Nominator == nil {
		return nil
	}
	return f.opts.Nominator.NominatedPodsForNode(name)
}

// sampled tells whether this cycle records per-plugin durations (one in ten, as
// upstream, since timing every plugin call costs more than some plugins do).
func (f *Framework) sampled() bool { return f.opts.Metrics != nil && f.cycles.Load()%10 == 0 }

func (f *Framework) observePoint(point string, st *framework.Status, start time.Time) {
	if f.opts.Metrics != nil {
		f.opts.Metrics.ObservePoint(f.profile, point, st.Code(), time.Since(start))
	}
}

// RunPreFilterPlugins runs PreFilter; plugins that return Skip are recorded in state so
// that their Filter is not called. It returns the intersection of the plugins' node sets.
func (f *Framework) RunPreFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod) (res *framework.PreFilterResult, st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PreFilter, st, start) }()
	sampled := f.sampled()
	for _, p := range f.preFilter {
		t := time.Now()
		r, s := p.PreFilter(ctx, state, pod)
		if sampled {
			f.opts.Metrics.ObservePlugin(config.PreFilter, p.Name(), s.Code(), time.Since(t))
		}
		if s.IsSkip() {
			if state.SkipFilterPlugins == nil {
				state.SkipFilterPlugins = map[string]struct{}{}
			}
			state.SkipFilterPlugins[p.Name()] = struct{}{}
			continue
		}
		if !s.IsSuccess() {
			s.WithPlugin(p.Name())
			if s.Code() == framework.Error {
				return nil, pluginError("PreFilter", p.Name(), s)
			}
			return nil, s
		}
		if r != nil && r.NodeNames != nil {
			if res == nil {
				res = r
			} else {
				res = &framework.PreFilterResult{NodeNames: intersect(res.NodeNames, r.NodeNames)}
			}
			if len(res.NodeNames) == 0 {
				return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) ["+p.Name()+"] simultaneously").WithPlugin(p.Name())
			}
		}
	}
	return res, nil
}

func intersect(a, b map[string]struct{}) map[string]struct{} {
	out := map[string]struct{}{}
	for k := range a {
		if _, ok := b[k]; ok {
			out[k] = struct{}{}
		}
	}
	return out
}

// RunPreFilterExtensionAddPod implements framework.PreemptionHandle.
func (f *Framework) RunPreFilterExtensionAddPod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, add *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return f.runPreFilterExtension(state, "AddPod", func(ext framework.PreFilterExtensions) *framework.Status {
		return ext.AddPod(ctx, state, pod, add, node)
	})
}

// RunPreFilterExtensionRemovePod implements framework.PreemptionHandle.
func (f *Framework) RunPreFilterExtensionRemovePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod, rm *framework.PodInfo, node *framework.NodeInfo) *framework.Status {
	return f.runPreFilterExtension(state, "RemovePod", func(ext framework.PreFilterExtensions) *framework.Status {
		return ext.RemovePod(ctx, state, pod, rm, node)
	})
}

// runPreFilterExtension calls op (AddPod or RemovePod) on the PreFilterExtensions of every
// PreFilter plugin not skipped in this cycle, stopping at the first failure.
func (f *Framework) runPreFilterExtension(state *framework.CycleState, op string, call func(framework.PreFilterExtensions) *framework.Status) *framework.Status {
	for _, p := range f.preFilter {
		if _, skip := state.SkipFilterPlugins[p.Name()]; skip {
			continue
		}
		if ext, ok := p.(framework.PreFilterExtender); ok && ext.PreFilterExtensions() != nil {
			if s := call(ext.PreFilterExtensions()); !s.IsSuccess() {
				return framework.AsStatus(fmt.Errorf("running %s on PreFilter plugin %q: %w", op, p.Name(), s.AsError()))
			}
		}
	}
	return nil
}

// pluginError wraps a plugin's failed status as an Error that names the extension point
// and the plugin.
func pluginError(point, plugin string, s *framework.Status) *framework.Status {
	return framework.AsStatus(fmt.Errorf("running %s plugin %q: %w", point, plugin, s.AsError())).WithPlugin(plugin)
}

// RunFilterPlugins runs every Filter plugin on one node and returns the first
// rejection (with the plugin's name), or nil.
func (f *Framework) RunFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	for i := range f.filter {
		p := f.filter[i].p
		if _, skip := state.SkipFilterPlugins[p.Name()]; skip {
			continue
		}
		if s := p.Filter(ctx, state, pod, node); !s.IsSuccess() {
			if !s.IsRejected() {
				s = framework.AsStatus(fmt.Errorf("running Filter plugin %q on node %q: %w", p.Name(), nodeName(node), s.AsError()))
			}
			return s.WithPlugin(p.Name())
		}
	}
	return nil
}

func nodeName(n *framework.NodeInfo) string {
	if n.Node() == nil {
		return ""
	}
	return n.Node().Name
}

// RunFilterPluginsWithNominatedPods implements framework.PreemptionHandle as upstream:
// when pods of equal or higher priority are nominated to the node, the filters must pass
// both with them (they will take their room) and without them (affinity to them must
// not be counted before they are there).
func (f *Framework) RunFilterPluginsWithNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	withNominated, stateWith, added, err := f.addNominatedPods(ctx, state, pod, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if s := f.RunFilterPlugins(ctx, stateWith, pod, withNominated); !s.IsSuccess() || !added {
		return s
	}
	return f.RunFilterPlugins(ctx, state, pod, node)
}

func (f *Framework) addNominatedPods(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (*framework.NodeInfo, *framework.CycleState, bool, error) {
	if f.opts.Nominator == nil || node.Node() == nil {
		return node, state, false, nil
	}
	nominated := f.opts.Nominator.NominatedPodsForNode(node.Node().Name)
	if len(nominated) == 0 {
		return node, state, false, nil
	}
	var clone *framework.NodeInfo
	var st *framework.CycleState
	prio := framework.PodPriority(pod)
	for _, np := range nominated {
		if framework.PodPriority(np.Pod) >= prio && np.Pod.UID != pod.UID {
			if clone == nil {
				clone = node.Clone()
				st = state.Clone()
			}
			clone.AddPodInfo(np)
			if s := f.RunPreFilterExtensionAddPod(ctx, st, pod, np, clone); !s.IsSuccess() {
				return nil, nil, false, s.AsError()
			}
		}
	}
	if clone == nil {
		return node, state, false, nil
	}
	return clone, st, true, nil
}

// NumFeasibleNodesToFind is upstream's adaptive sample size: every node up to 100; then
// percentage (or, when 0, 50% minus 1% per 125 nodes, floored at 5%) of the nodes, but
// never fewer than 100.
func NumFeasibleNodesToFind(percentage int32, numAllNodes int) int {
	const minFeasible = 100
	if numAllNodes < minFeasible || percentage >= 100 {
		return numAllNodes
	}
	adaptive := percentage
	if adaptive <= 0 {
		adaptive = int32(50 - numAllNodes/125)
		if adaptive < 5 {
			adaptive = 5
		}
	}
	n := numAllNodes * int(adaptive) / 100
	if n < minFeasible {
		return minFeasible
	}
	return n
}

// ErrNoNodes is returned when the cluster has no nodes at all.
var ErrNoNodes = errors.New("no nodes available to schedule pods")

// ScheduleResult is the outcome of a scheduling cycle's decision part.
type ScheduleResult struct {
	SuggestedHost  string
	EvaluatedNodes int
	FeasibleNodes  int
	Explanation    *Explanation
	// Totals are the feasible nodes' total scores (Options.KeepTotals only).
	Totals map[string]int64
	// Batch is what batching did in this cycle (BatchReused, BatchStored, BatchUnsignable
	// or the reason a kept ranking was dropped); "" when the profile does not batch.
	Batch string
}

// SchedulePod runs PreFilter, Filter, PreScore and Score and picks a node. An
// unschedulable pod gives a *FitError (with the per-node verdicts PostFilter needs);
// other failures give plain errors.
func (f *Framework) SchedulePod(ctx context.Context, state *framework.CycleState, pod *v1.Pod) (ScheduleResult, error) {
	f.cycles.Add(1)
	f.whole = f.opts.RecordNodes > 0 && (f.opts.RecordWhole == nil || f.opts.RecordWhole())
	all, err := f.opts.Lister.List()
	if err != nil {
		return ScheduleResult{}, err
	}
	if len(all) == 0 {
		return ScheduleResult{}, ErrNoNodes
	}
	diag := Diagnosis{NodeToStatus: framework.NodeToStatusMap{}, UnschedulablePlugins: map[string]struct{}{}}
	pre, st := f.RunPreFilterPlugins(ctx, state, pod)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return ScheduleResult{}, st.AsError()
		}
		for _, n := range all {
			diag.NodeToStatus[n.Node().Name] = st
		}
		diag.PreFilterMsg = st.Message()
		diag.UnschedulablePlugins[st.Plugin()] = struct{}{}
		return ScheduleResult{}, &FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diag}
	}

	// A pod nominated by preemption tries its nominated node first.
	if nn := pod.Status.NominatedNodeName; nn != "" {
		if ni, err := f.opts.Lister.Get(nn); err == nil && ni.Node() != nil {
			if s := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); s.IsSuccess() {
				res := ScheduleResult{SuggestedHost: nn, EvaluatedNodes: 1, FeasibleNodes: 1}
				res.Explanation = f.explain(pod, len(all), 1, []*framework.NodeInfo{ni}, nil, nil, diag)
				return res, nil
			} else if s.Code() == framework.Error {
				return ScheduleResult{}, s.AsError()
			}
		}
	}

	var sig []byte
	batchOutcome := ""
	if f.opts.Batching {
		sig, batchOutcome = f.batchSignature(ctx, pod, pre)
		if sig != nil {
			res, outcome, ok, err := f.scheduleFromBatch(ctx, state, pod, sig, all, &diag)
			if err != nil {
				return ScheduleResult{}, err
			}
			if ok {
				return res, nil
			}
			batchOutcome = outcome
		}
	}

	nodes := all
	if pre != nil && pre.NodeNames != nil {
		nodes = make([]*framework.NodeInfo, 0, len(pre.NodeNames))
		for name := range pre.NodeNames {
			if ni, err := f.opts.Lister.Get(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		for _, n := range all {
			if _, ok := pre.NodeNames[n.Node().Name]; !ok {
				diag.NodeToStatus[n.Node().Name] = framework.NewStatus(framework.UnschedulableAndUnresolvable, "node is filtered out by the prefilter result")
			}
		}
	}
	feasible, evaluated, err := f.findFeasible(ctx, state, pod, nodes, &diag)
	if err != nil {
		return ScheduleResult{}, err
	}
	if len(feasible) == 0 {
		return ScheduleResult{EvaluatedNodes: evaluated, Batch: batchOutcome}, &FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diag}
	}
	res := ScheduleResult{EvaluatedNodes: evaluated, FeasibleNodes: len(feasible), Batch: batchOutcome}
	if len(feasible) == 1 && sig == nil && f.opts.ExplainTopNodes == 0 && !f.opts.KeepTotals {
		res.SuggestedHost = feasible[0].Node().Name
		return res, nil
	}
	if s := f.runPreScore(ctx, state, pod, feasible); !s.IsSuccess() {
		return ScheduleResult{}, s.AsError()
	}
	// The batch and the decision record (record.go) read raw scores.
	switch {
	case sig != nil:
		f.keepRaw = rawForBatch
	case f.whole:
		f.keepRaw = rawForRecord
	}
	scores, totals, s := f.runScore(ctx, state, pod, feasible)
	f.keepRaw = rawNone
	if !s.IsSuccess() {
		return ScheduleResult{}, s.AsError()
	}
	if sig != nil {
		if err := f.storeBatch(sig, state, len(all), evaluated, feasible, &diag); err != nil {
			return ScheduleResult{}, err
		}
		if res.Batch == "" {
			res.Batch = BatchStored
		}
	}
	best := selectHost(totals)
	res.SuggestedHost = feasible[best].Node().Name
	if len(f.monitors) > 0 {
		f.runMonitors(ctx, state, pod, feasible, totals, best)
	}
	if f.opts.KeepTotals {
		res.Totals = make(map[string]int64, len(feasible))
		for i, n := range feasible {
			res.Totals[n.Node().Name] = totals[i]
		}
	}
	res.Explanation = f.explain(pod, len(all), evaluated, feasible, scores, totals, diag)
	return res, nil
}

// findFeasible filters nodes in parallel chunks, starting where the previous cycle
// stopped (so every node gets its turn), until enough feasible nodes are found.
func (f *Framework) findFeasible(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, diag *Diagnosis) ([]*framework.NodeInfo, int, error) {
	start := time.Now()
	n := len(nodes)
	want := NumFeasibleNodesToFind(f.opts.PercentageOfNodesToScore, n)
	if len(f.filter) == 0 {
		out := make([]*framework.NodeInfo, want)
		for i := range want {
			out[i] = nodes[(f.nextStartNodeIndex+i)%n]
		}
		f.nextStartNodeIndex = (f.nextStartNodeIndex + want) % n
		return out, want, nil
	}
	feasible := make([]*framework.NodeInfo, want)
	var found, processed atomic.Int64
	var mu sync.Mutex
	var firstErr *framework.Status
	// cctx only stops handing out chunks (enough nodes found, or an error); plugins get
	// ctx, so that a plugin honouring cancellation does not turn an early stop into an
	// error.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	startIdx := f.nextStartNodeIndex
	sampled := f.sampled()
	var pluginTime []atomic.Int64
	if sampled {
		pluginTime = make([]atomic.Int64, len(f.filter))
	}
	reject := func(ni *framework.NodeInfo, s *framework.Status) {
		mu.Lock()
		if s.Code() == framework.Error {
			if firstErr == nil {
				firstErr = s
			}
			mu.Unlock()
			cancel()
			return
		}
		diag.NodeToStatus[ni.Node().Name] = s
		diag.UnschedulablePlugins[s.Plugin()] = struct{}{}
		mu.Unlock()
	}
	accept := func(ni *framework.NodeInfo) {
		i := found.Add(1)
		if i > int64(want) {
			cancel()
			return
		}
		feasible[i-1] = ni
	}
	chunk := min(chunkSize(n, f.workers), max(8, want/(f.workers*2)))
	parallelize(cctx, f.workers, n, chunk, func(lo, hi int) {
		if found.Load() >= int64(want) {
			return
		}
		processed.Add(int64(hi - lo))
		alive := make([]*framework.NodeInfo, 0, hi-lo)
		for i := lo; i < hi; i++ {
			ni := nodes[(startIdx+i)%n]
			if f.opts.Nominator != nil && len(f.opts.Nominator.NominatedPodsForNode(ni.Node().Name)) > 0 {
				if s := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); s.IsSuccess() {
					accept(ni)
				} else {
					reject(ni, s)
				}
				continue
			}
			alive = append(alive, ni)
		}
		var statuses []*framework.Status
		for pi := range f.filter {
			if len(alive) == 0 {
				break
			}
			fp := &f.filter[pi]
			name := fp.p.Name()
			if _, skip := state.SkipFilterPlugins[name]; skip {
				continue
			}
			var t time.Time
			if sampled {
				t = time.Now()
			}
			if fp.batch != nil {
				if cap(statuses) < len(alive) {
					statuses = make([]*framework.Status, len(alive))
				}
				statuses = statuses[:len(alive)]
				clear(statuses)
				fp.batch.FilterBatch(ctx, state, pod, alive, statuses)
			} else {
				statuses = statuses[:0]
				for _, ni := range alive {
					statuses = append(statuses, fp.p.Filter(ctx, state, pod, ni))
				}
			}
			if sampled {
				pluginTime[pi].Add(int64(time.Since(t)))
			}
			kept := alive[:0]
			for i, ni := range alive {
				s := statuses[i]
				if s.IsSuccess() {
					kept = append(kept, ni)
					continue
				}
				if !s.IsRejected() {
					s = framework.AsStatus(fmt.Errorf("running Filter plugin %q on node %q: %w", name, ni.Node().Name, s.AsError()))
				}
				reject(ni, s.WithPlugin(name))
			}
			alive = kept
		}
		for _, ni := range alive {
			accept(ni)
		}
	})
	if sampled {
		for pi := range f.filter {
			f.opts.Metrics.ObservePlugin(config.Filter, f.filter[pi].p.Name(), framework.Success, time.Duration(pluginTime[pi].Load()))
		}
	}
	if firstErr != nil {
		f.observePoint(config.Filter, firstErr, start)
		return nil, 0, firstErr.AsError()
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	evaluated := int(processed.Load())
	f.nextStartNodeIndex = (startIdx + evaluated) % n
	k := min(int(found.Load()), want)
	f.observePoint(config.Filter, nil, start)
	return feasible[:k], evaluated, nil
}

func (f *Framework) runPreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) (st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PreScore, st, start) }()
	sampled := f.sampled()
	for _, p := range f.preScore {
		t := time.Now()
		s := p.PreScore(ctx, state, pod, nodes)
		if sampled {
			f.opts.Metrics.ObservePlugin(config.PreScore, p.Name(), s.Code(), time.Since(t))
		}
		if s.IsSkip() {
			if state.SkipScorePlugins == nil {
				state.SkipScorePlugins = map[string]struct{}{}
			}
			state.SkipScorePlugins[p.Name()] = struct{}{}
			continue
		}
		if !s.IsSuccess() {
			return pluginError("PreScore", p.Name(), s)
		}
	}
	return nil
}

// runScore scores nodes with every Score plugin (chunks in parallel), normalizes each
// plugin's scores, applies weights, and returns per-plugin weighted scores and totals.
// Plugins skipped in PreScore score 0.
func (f *Framework) runScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) ([]framework.NodeScoreList, []int64, *framework.Status) {
	start := time.Now()
	n := len(nodes)
	f.prepareScores(nodes)
	active := f.activeScores(state)
	var mu sync.Mutex
	var firstErr *framework.Status
	sampled := f.sampled()
	var pluginTime []atomic.Int64
	if sampled {
		pluginTime = make([]atomic.Int64, len(f.score))
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parallelize(cctx, f.workers, n, chunkSize(n, f.workers), func(lo, hi int) {
		var raw []int64
		for pi := range f.score {
			if !active[pi] {
				continue
			}
			sp := &f.score[pi]
			var t time.Time
			if sampled {
				t = time.Now()
			}
			list := f.scoreBuf[pi]
			var s *framework.Status
			if sp.batch != nil {
				if cap(raw) < hi-lo {
					raw = make([]int64, hi-lo)
				}
				raw = raw[:hi-lo]
				s = sp.batch.ScoreBatch(ctx, state, pod, nodes[lo:hi], raw)
				for i := lo; i < hi; i++ {
					list[i].Score = raw[i-lo]
				}
			} else {
				for i := lo; i < hi && s.IsSuccess(); i++ {
					list[i].Score, s = sp.p.Score(ctx, state, pod, nodes[i])
				}
			}
			if sampled {
				pluginTime[pi].Add(int64(time.Since(t)))
			}
			if !s.IsSuccess() {
				mu.Lock()
				if firstErr == nil {
					firstErr = pluginError("Score", sp.p.Name(), s)
				}
				mu.Unlock()
				cancel()
				return
			}
		}
	})
	if firstErr != nil {
		f.observePoint(config.Score, firstErr, start)
		return nil, nil, firstErr
	}
	if f.keepRaw != rawNone {
		f.saveRawScores(n)
	}
	totals, st := f.finishScores(ctx, state, pod, active)
	if st == nil && sampled {
		for pi := range f.score {
			if active[pi] {
				f.opts.Metrics.ObservePlugin(config.Score, f.score[pi].p.Name(), framework.Success, time.Duration(pluginTime[pi].Load()))
			}
		}
	}
	f.observePoint(config.Score, st, start)
	if st != nil {
		return nil, nil, st
	}
	return f.scoreBuf, totals, nil
}

// prepareScores sizes the per-plugin score lists to nodes, with the nodes' names and
// zero scores.
func (f *Framework) prepareScores(nodes []*framework.NodeInfo) {
	n := len(nodes)
	if len(f.scoreBuf) != len(f.score) {
		f.scoreBuf = make([]framework.NodeScoreList, len(f.score))
	}
	for i := range f.score {
		if cap(f.scoreBuf[i]) < n {
			f.scoreBuf[i] = make(framework.NodeScoreList, n)
		}
		f.scoreBuf[i] = f.scoreBuf[i][:n]
		for j, ni := range nodes {
			f.scoreBuf[i][j] = framework.NodeScore{Name: ni.Node().Name}
		}
	}
}

// activeScores tells, per Score plugin, whether it scores this cycle (not skipped in
// PreScore).
func (f *Framework) activeScores(state *framework.CycleState) []bool {
	active := make([]bool, len(f.score))
	for i := range f.score {
		_, skip := state.SkipScorePlugins[f.score[i].p.Name()]
		active[i] = !skip
	}
	return active
}

// finishScores turns the raw scores in f.scoreBuf into final ones: each active plugin's
// NormalizeScore, the range check, the weight; it returns the nodes' totals.
func (f *Framework) finishScores(ctx context.Context, state *framework.CycleState, pod *v1.Pod, active []bool) ([]int64, *framework.Status) {
	n := 0
	if len(f.scoreBuf) > 0 {
		n = len(f.scoreBuf[0])
	}
	if cap(f.totalBuf) < n {
		f.totalBuf = make([]int64, n)
	}
	totals := f.totalBuf[:n]
	clear(totals)
	for pi := range f.score {
		sp := &f.score[pi]
		list := f.scoreBuf[pi]
		if !active[pi] {
			continue
		}
		if ext := sp.p.ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, state, pod, list); !s.IsSuccess() {
				return nil, framework.AsStatus(fmt.Errorf("running NormalizeScore of plugin %q: %w", sp.p.Name(), s.AsError())).WithPlugin(sp.p.Name())
			}
		}
		for i := range list {
			sc := list[i].Score
			if sc > framework.MaxNodeScore || sc < framework.MinNodeScore {
				return nil, framework.AsStatus(fmt.Errorf("plugin %q returned an invalid score %d for node %q: scores must be in [%d, %d]", sp.p.Name(), sc, list[i].Name, framework.MinNodeScore, framework.MaxNodeScore)).WithPlugin(sp.p.Name())
			}
			list[i].Score = sc * sp.weight
			totals[i] += list[i].Score
		}
	}
	return totals, nil
}

// selectHost returns the index of the highest total, breaking ties uniformly at random
// (reservoir sampling, as upstream), so equal nodes share the load.
func selectHost(totals []int64) int {
	best, ties := 0, 1
	for i := 1; i < len(totals); i++ {
		switch {
		case totals[i] > totals[best]:
			best, ties = i, 1
		case totals[i] == totals[best]:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// RunPostFilterPlugins runs PostFilter plugins until one returns Success (or an Error).
func (f *Framework) RunPostFilterPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m framework.NodeToStatusMap) (res *framework.PostFilterResult, st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PostFilter, st, start) }()
	var msgs []string
	for _, p := range f.postFilter {
		r, s := p.PostFilter(ctx, state, pod, m)
		if s.IsSuccess() {
			return r, s
		}
		if s.Code() == framework.Error {
			return nil, pluginError("PostFilter", p.Name(), s)
		}
		if r != nil && r.NominatedNodeName != "" {
			res = r
		}
		msgs = append(msgs, s.Message())
	}
	if len(msgs) == 0 {
		return res, framework.NewStatus(framework.Unschedulable)
	}
	return res, framework.NewStatus(framework.Unschedulable, msgs...)
}

// RunReservePluginsReserve runs Reserve; on failure the caller runs Unreserve.
func (f *Framework) RunReservePluginsReserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) (st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.Reserve, st, start) }()
	if f.opts.Lister != nil {
		if ni, err := f.opts.Lister.Get(node); err == nil && ni.Node() != nil {
			framework.SetChosenNode(state, ni.Node())
		}
	}
	for _, p := range f.reserve {
		if s := p.Reserve(ctx, state, pod, node); !s.IsSuccess() {
			if s.IsRejected() {
				return s.WithPlugin(p.Name())
			}
			return pluginError("Reserve", p.Name(), s)
		}
	}
	return nil
}

// RunReservePluginsUnreserve runs Unreserve in reverse order.
func (f *Framework) RunReservePluginsUnreserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) {
	for i := len(f.reserve) - 1; i >= 0; i-- {
		f.reserve[i].Unreserve(ctx, state, pod, node)
	}
}

// RunPreBindPlugins runs PreBind.
func (f *Framework) RunPreBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) (st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.PreBind, st, start) }()
	for _, p := range f.preBind {
		if s := p.PreBind(ctx, state, pod, node); !s.IsSuccess() {
			if s.IsRejected() {
				// "bind only once the license server says yes": the pod requeues as
				// unschedulable, its hints deciding when it comes back.
				return s.WithPlugin(p.Name())
			}
			return pluginError("PreBind", p.Name(), s)
		}
	}
	return nil
}

// RunBindPlugins runs Bind plugins until one does not Skip.
func (f *Framework) RunBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) (st *framework.Status) {
	start := time.Now()
	defer func() { f.observePoint(config.Bind, st, start) }()
	for _, p := range f.bind {
		s := p.Bind(ctx, state, pod, node)
		if s.IsSkip() {
			continue
		}
		if !s.IsSuccess() {
			return pluginError("Bind", p.Name(), s)
		}
		return nil
	}
	return framework.NewStatus(framework.Error, "every Bind plugin skipped the pod")
}

// RunPostBindPlugins runs PostBind.
func (f *Framework) RunPostBindPlugins(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) {
	for _, p := range f.postBind {
		p.PostBind(ctx, state, pod, node)
	}
}
