package schedwasm

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// FailurePolicy says what a plugin failure means for scheduling (docs/abi.md section 7).
type FailurePolicy string

// The failure policies.
const (
	// Fail rejects the batch's nodes (Filter) or fails the cycle (other extension points).
	Fail FailurePolicy = "Fail"
	// Ignore skips the plugin's verdict: nodes pass, scores are 0.
	Ignore FailurePolicy = "Ignore"
)

// core is what every extension point of a wasm plugin shares: its pool and policy.
type core struct {
	name   string
	pool   *wasmhost.Pool
	loaded *wasmhost.Loaded // the pool and the plugin's share of the module
	policy FailurePolicy
	calls  sync.Pool

	// shared are the plugin's counters; waitingPods the profile's pods held at Permit
	// (nil outside a scheduler), groups the group each pod this plugin holds was given.
	shared      *SharedCounters
	waitingPods framework.WaitingPodHandle
	groups      waitGroups
	// digest is the sha256 of the module's bytes, shown by the decision explorer.
	digest string
}

// Name implements framework.Plugin.
func (c *core) Name() string { return c.name }

// Kinds are the entry points the module exports.
func (c *core) Kinds() wasmhost.Kinds { return c.pool.Module().Kinds() }

// Close closes the plugin's instances and its share of the module; calls in flight
// finish first. The scheduler calls it (runtime.Framework.Close) when a config swap
// retires the plugin's profile and the cycles that used it have finished.
func (c *core) Close() error {
	c.loaded.Close()
	return nil
}

func (c *core) getCall(kind *wasmhost.Kind, state *framework.CycleState, pod *v1.Pod) *Call {
	call, _ := c.calls.Get().(*Call)
	if call == nil {
		call = &Call{}
	}
	*call = Call{Kind: kind, Pod: pod, Requests: podRequests(state, pod), State: state, Verdicts: call.Verdicts[:0]}
	return call
}

func (c *core) putCall(call *Call) {
	*call = Call{Verdicts: call.Verdicts[:0]}
	c.calls.Put(call)
}

// failed turns a call error into the status the policy asks for; nil for Ignore. A
// cancelled call is not the plugin's failure: it is an Error whatever the policy, as the
// caller is abandoning the cycle anyway.
func (c *core) failed(err error) *framework.Status {
	if c.policy == Ignore && !canceled(err) {
		return nil
	}
	return framework.AsStatus(err).WithPlugin(c.name)
}

func canceled(err error) bool {
	var ce *wasmhost.CallError
	return errors.As(err, &ce) && ce.Reason == wasmhost.ReasonCanceled
}

// requestsState caches the pod's effective request for the cycle, shared by all wasm
// plugins, so that a pod's requests are computed once however many batches run.
type requestsState struct{ r *PodRequests }

// Clone implements framework.StateData; the value is never modified after creation.
func (s requestsState) Clone() framework.StateData { return s }

const requestsKey framework.StateKey = "wasmkube.io/wasm-pod-requests"

func podRequests(state *framework.CycleState, pod *v1.Pod) *PodRequests {
	if state == nil {
		return NewPodRequests(pod)
	}
	if d, ok := state.Read(requestsKey); ok {
		if rs, ok := d.(requestsState); ok {
			return rs.r
		}
	}
	r := NewPodRequests(pod)
	state.Write(requestsKey, requestsState{r})
	return r
}

func status(code int32, reason, plugin string) *framework.Status {
	if code == CodeSuccess {
		return nil
	}
	// Several reasons travel as one string separated by newlines (docs/abi.md 4.4), so
	// that "0/5 nodes are available" messages count each reason separately.
	return framework.NewStatus(framework.Code(code), strings.Split(reason, "\n")...).WithPlugin(plugin)
}

// preFilterPart implements framework.PreFilterPlugin.
type preFilterPart struct{ c *core }

// PreFilter calls wasmkube_prefilter.
func (p preFilterPart) PreFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	c := p.c
	call := c.getCall(PreFilter, state, pod)
	defer c.putCall(call)
	if err := call.Do(ctx, c.pool); err != nil {
		return nil, c.failed(err)
	}
	if call.Code != CodeSuccess {
		return nil, status(call.Code, call.Reason, c.name)
	}
	if call.PreFilterNodes == nil {
		return nil, nil
	}
	res := &framework.PreFilterResult{NodeNames: make(map[string]struct{}, len(call.PreFilterNodes))}
	for _, n := range call.PreFilterNodes {
		res.NodeNames[n] = struct{}{}
	}
	return res, nil
}

// filterPart implements framework.BatchFilterPlugin.
type filterPart struct{ c *core }

// Filter filters one node (a batch of one).
func (p filterPart) Filter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	var st [1]*framework.Status
	p.FilterBatch(ctx, state, pod, []*framework.NodeInfo{node}, st[:])
	return st[0]
}

// FilterBatch calls wasmkube_filter once for all nodes.
func (p filterPart) FilterBatch(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, statuses []*framework.Status) {
	c := p.c
	call := c.getCall(Filter, state, pod)
	defer c.putCall(call)
	call.Nodes = nodes
	if err := call.Do(ctx, c.pool); err != nil {
		switch {
		case canceled(err):
			for i := range statuses {
				statuses[i] = framework.AsStatus(err).WithPlugin(c.name)
			}
		case c.policy == Fail:
			for i := range statuses {
				statuses[i] = framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error()).WithPlugin(c.name)
			}
		}
		return
	}
	nodeErrors := 0
	for _, v := range call.Verdicts {
		if v.Code == CodeError {
			// An error for one node is a failure for that node only.
			nodeErrors++
			if c.policy == Fail {
				statuses[v.Index] = framework.NewStatus(framework.UnschedulableAndUnresolvable, "wasm plugin "+c.name+": "+v.Reason).WithPlugin(c.name)
			}
			continue
		}
		statuses[v.Index] = status(v.Code, v.Reason, c.name)
	}
	if nodeErrors > 0 {
		c.pool.CountFailure(Filter)
	}
}

// postFilterPart implements framework.PostFilterPlugin.
type postFilterPart struct{ c *core }

// PostFilter calls wasmkube_postfilter with the rejected nodes, in name order.
func (p postFilterPart) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, filtered framework.NodeToStatusMap) (*framework.PostFilterResult, *framework.Status) {
	c := p.c
	call := c.getCall(PostFilter, state, pod)
	defer c.putCall(call)
	names := make([]string, 0, len(filtered))
	for n := range filtered {
		names = append(names, n)
	}
	sort.Strings(names)
	codes := make([]int32, len(names))
	for i, n := range names {
		codes[i] = int32(filtered[n].Code())
	}
	call.NodeNames, call.FilterCodes = names, codes
	if err := call.Do(ctx, c.pool); err != nil {
		if c.policy == Ignore && !canceled(err) {
			return nil, framework.NewStatus(framework.Unschedulable, "wasm plugin "+c.name+" failed (ignored): "+err.Error()).WithPlugin(c.name)
		}
		return nil, c.failed(err)
	}
	if call.Code != CodeSuccess || call.Nominated == "" {
		reason := call.Reason
		if reason == "" {
			reason = "no node nominated"
		}
		return nil, framework.NewStatus(framework.Unschedulable, reason).WithPlugin(c.name)
	}
	return &framework.PostFilterResult{NominatedNodeName: call.Nominated}, nil
}

// preScorePart implements framework.PreScorePlugin.
type preScorePart struct{ c *core }

// PreScore calls wasmkube_prescore with all feasible nodes.
func (p preScorePart) PreScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo) *framework.Status {
	c := p.c
	call := c.getCall(PreScore, state, pod)
	defer c.putCall(call)
	call.Nodes = nodes
	if err := call.Do(ctx, c.pool); err != nil {
		return c.failed(err)
	}
	return status(call.Code, call.Reason, c.name)
}

// scorePart implements framework.BatchScorePlugin.
type scorePart struct{ c *core }

// Score scores one node (a batch of one).
func (p scorePart) Score(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	var s [1]int64
	st := p.ScoreBatch(ctx, state, pod, []*framework.NodeInfo{node}, s[:])
	return s[0], st
}

// ScoreBatch calls wasmkube_score once for all nodes.
func (p scorePart) ScoreBatch(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, scores []int64) *framework.Status {
	c := p.c
	call := c.getCall(Score, state, pod)
	defer c.putCall(call)
	clear(scores)
	call.Nodes, call.Scores = nodes, scores
	if err := call.Do(ctx, c.pool); err != nil {
		clear(scores)
		return c.failed(err)
	}
	return nil
}

// ScoreExtensions returns the NormalizeScore of the module, or nil when it has none.
func (p scorePart) ScoreExtensions() framework.ScoreExtensions {
	if p.c.Kinds().Has(NormalizeScore) {
		return normalizePart(p)
	}
	return nil
}

// normalizePart implements framework.ScoreExtensions.
type normalizePart struct{ c *core }

// NormalizeScore calls wasmkube_normalizescore with all scores.
func (p normalizePart) NormalizeScore(ctx context.Context, state *framework.CycleState, pod *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	c := p.c
	call := c.getCall(NormalizeScore, state, pod)
	defer c.putCall(call)
	names := make([]string, len(scores))
	raw := make([]int64, len(scores))
	for i, s := range scores {
		names[i], raw[i] = s.Name, s.Score
	}
	call.NodeNames, call.Scores = names, raw
	if err := call.Do(ctx, c.pool); err != nil {
		if c.policy == Ignore && !canceled(err) {
			for i := range scores {
				scores[i].Score = min(max(scores[i].Score, framework.MinNodeScore), framework.MaxNodeScore)
			}
			return nil
		}
		return c.failed(err)
	}
	for i := range scores {
		scores[i].Score = raw[i]
	}
	return nil
}

var errNoSchedulerKind = errors.New("exports no scheduler entry point (wasmkube_prefilter, wasmkube_filter, wasmkube_postfilter, wasmkube_prescore, wasmkube_score, wasmkube_reserve, wasmkube_unreserve, wasmkube_permit, wasmkube_prebind, wasmkube_postbind)")
