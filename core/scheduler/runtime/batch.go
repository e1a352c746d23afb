package runtime

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Opportunistic batching (upstream's KEP-5598, docs/scheduler.md "Batching"): the
// Filter verdicts and raw Score of one full pass are kept, per node of the pass, for the
// next pods of equal signature. A node's entry stays valid while its NodeInfo is
// unchanged (same generation); a node that changed since (the pod just placed on it, a
// pod confirmed or deleted there) is filtered and scored again for the new pod alone.
// NormalizeScore, weights and host selection then run over the whole ranking as in a
// full pass, so a batched pod gets exactly the placement a full pass over the same
// nodes would give.

// Outcomes of a cycle for batching (ScheduleResult.Batch and the metric
// scheduler_batch_attempts_total{result}).
const (
	// BatchReused: the pod was placed from a kept ranking.
	BatchReused = "reused"
	// BatchStored: a full pass whose ranking is kept for the next pods.
	BatchStored = "stored"
	// BatchUnsignable: the pod has no signature; a full pass, nothing kept.
	BatchUnsignable = "unsignable"
	// The reasons a kept ranking is dropped before a full pass.
	BatchFlushSignature  = "flush_signature"   // the pod's signature differs
	BatchFlushExpired    = "flush_expired"     // the ranking is older than maxBatchAge
	BatchFlushNodeList   = "flush_node_list"   // a node joined or left
	BatchFlushChanged    = "flush_changed"     // too many of its nodes changed to redo them
	BatchFlushNominated  = "flush_nominated"   // pods are nominated (preemption in flight)
	BatchFlushSkips      = "flush_skips"       // PreFilter/PreScore skipped other plugins
	BatchFlushNoFeasible = "flush_no_feasible" // none of its nodes fits the pod any more
)

// maxBatchAge bounds how long a ranking serves, as upstream's: a pass looks at only part
// of a large cluster, and a ranking that served for long would keep the pods there.
const maxBatchAge = 500 * time.Millisecond

// listVersioner is the snapshot's node-list version (cache.Snapshot).
type listVersioner interface{ ListVersion() int64 }

// anyNominator tells cheaply whether pods are nominated anywhere (the queue).
type anyNominator interface{ AnyNominated() bool }

// batch is the ranking of one full pass.
type batch struct {
	sig         []byte
	created     time.Time
	numNodes    int
	listVersion int64
	skipFilter  map[string]struct{}
	skipScore   map[string]struct{}
	// nodes are the nodes the pass has a verdict for: the feasible ones it kept and the
	// ones it rejected.
	nodes []batchNode
	// want is the pass's number of feasible nodes to find; evaluated how many it looked at.
	want, evaluated int
	reused          int
}

type batchNode struct {
	ni  *framework.NodeInfo
	gen int64
	// status is the Filter verdict (nil: feasible); raw the raw score of each Score
	// plugin (feasible nodes only).
	status *framework.Status
	raw    []int64
}

func (f *Framework) nodeListVersion() int64 {
	if lv, ok := f.opts.Lister.(listVersioner); ok {
		return lv.ListVersion()
	}
	return -1
}

func (f *Framework) nominatedAnywhere() bool {
	if an, ok := f.opts.Nominator.(anyNominator); ok {
		return an.AnyNominated()
	}
	return f.opts.Nominator != nil
}

// batchSignature returns the signature the pod is batched by, or "" and why not.
func (f *Framework) batchSignature(ctx context.Context, pod *v1.Pod, pre *framework.PreFilterResult) ([]byte, string) {
	if pod.Status.NominatedNodeName != "" || (pre != nil && pre.NodeNames != nil) {
		return nil, BatchUnsignable
	}
	if f.nominatedAnywhere() {
		f.batch = nil
		return nil, BatchFlushNominated
	}
	sig, _ := f.SignPod(ctx, pod)
	if sig == nil {
		return nil, BatchUnsignable
	}
	return sig, ""
}

// usable says why the kept ranking cannot serve a pod of signature sig ("" if it can).
func (b *batch) usable(sig []byte, now time.Time, numNodes int, listVersion int64, state *framework.CycleState) string {
	switch {
	case !bytes.Equal(sig, b.sig):
		return BatchFlushSignature
	case now.Sub(b.created) > maxBatchAge:
		return BatchFlushExpired
	case numNodes != b.numNodes || listVersion != b.listVersion:
		return BatchFlushNodeList
	case !sameSet(state.SkipFilterPlugins, b.skipFilter):
		return BatchFlushSkips
	}
	return ""
}

func sameSet(a, b map[string]struct{}) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// maxRedo is how many changed nodes a ranking redoes for one pod before a full pass is
// cheaper: a tenth of its nodes, at least 8.
func maxRedo(n int) int { return max(8, n/10) }

// scheduleFromBatch places pod from the kept ranking, redoing the nodes that changed. ok
// is false (and the ranking dropped, the reason in outcome) when it cannot serve.
func (f *Framework) scheduleFromBatch(ctx context.Context, state *framework.CycleState, pod *v1.Pod, sig []byte, all []*framework.NodeInfo, diag *Diagnosis) (res ScheduleResult, outcome string, ok bool, err error) {
	b := f.batch
	if b == nil {
		return res, "", false, nil
	}
	if why := b.usable(sig, time.Now(), len(all), f.nodeListVersion(), state); why != "" {
		f.batch = nil
		return res, why, false, nil
	}
	// Redo the nodes whose NodeInfo changed since their verdict was taken.
	var redo []int
	for i := range b.nodes {
		if bn := &b.nodes[i]; bn.ni.Generation != bn.gen {
			redo = append(redo, i)
		}
	}
	if len(redo) > maxRedo(len(b.nodes)) {
		f.batch = nil
		return res, BatchFlushChanged, false, nil
	}
	for _, i := range redo {
		bn := &b.nodes[i]
		s := f.RunFilterPlugins(ctx, state, pod, bn.ni)
		if s.Code() == framework.Error {
			f.batch = nil
			return res, "", false, s.AsError()
		}
		bn.gen, bn.status, bn.raw = bn.ni.Generation, nil, nil
		if !s.IsSuccess() {
			bn.status = s
		}
	}
	feasible := make([]*framework.NodeInfo, 0, len(b.nodes))
	idx := make([]int, 0, len(b.nodes))
	for i := range b.nodes {
		if b.nodes[i].status == nil {
			feasible = append(feasible, b.nodes[i].ni)
			idx = append(idx, i)
		}
	}
	if len(feasible) == 0 {
		f.batch = nil
		return res, BatchFlushNoFeasible, false, nil
	}
	if s := f.runPreScore(ctx, state, pod, feasible); !s.IsSuccess() {
		f.batch = nil
		return res, "", false, s.AsError()
	}
	if !sameSet(state.SkipScorePlugins, b.skipScore) {
		f.batch = nil
		return res, BatchFlushSkips, false, nil
	}
	active := f.activeScores(state)
	for _, i := range idx {
		bn := &b.nodes[i]
		if bn.raw != nil {
			continue
		}
		bn.raw = make([]int64, len(f.score))
		for pi := range f.score {
			if !active[pi] {
				continue
			}
			sc, s := f.scoreOne(ctx, state, pod, pi, bn.ni)
			if !s.IsSuccess() {
				f.batch = nil
				return res, "", false, pluginError("Score", f.score[pi].p.Name(), s).AsError()
			}
			bn.raw[pi] = sc
		}
	}
	f.prepareScores(feasible)
	for pi := range f.score {
		for j, i := range idx {
			f.scoreBuf[pi][j].Score = b.nodes[i].raw[pi]
		}
	}
	totals, st := f.finishScores(ctx, state, pod, active)
	if st != nil {
		f.batch = nil
		return res, "", false, st.AsError()
	}
	for i := range b.nodes {
		if s := b.nodes[i].status; s != nil {
			diag.NodeToStatus[b.nodes[i].ni.Node().Name] = s
			diag.UnschedulablePlugins[s.Plugin()] = struct{}{}
		}
	}
	b.reused++
	best := selectHost(totals)
	res = ScheduleResult{SuggestedHost: feasible[best].Node().Name, EvaluatedNodes: b.evaluated, FeasibleNodes: len(feasible), Batch: BatchReused}
	if len(f.monitors) > 0 {
		f.runMonitors(ctx, state, pod, feasible, totals, best)
	}
	if f.opts.KeepTotals {
		res.Totals = make(map[string]int64, len(feasible))
		for i, n := range feasible {
			res.Totals[n.Node().Name] = totals[i]
		}
	}
	res.Explanation = f.explain(pod, len(all), b.evaluated, feasible, f.scoreBuf, totals, *diag)
	return res, BatchReused, true, nil
}

// scoreOne is Score plugin pi's raw score of one node (its batch form when it has one).
func (f *Framework) scoreOne(ctx context.Context, state *framework.CycleState, pod *v1.Pod, pi int, ni *framework.NodeInfo) (int64, *framework.Status) {
	sp := &f.score[pi]
	if sp.batch != nil {
		raw := []int64{0}
		s := sp.batch.ScoreBatch(ctx, state, pod, []*framework.NodeInfo{ni}, raw)
		return raw[0], s
	}
	return sp.p.Score(ctx, state, pod, ni)
}

// saveRawScores copies the raw scores of f.scoreBuf (before NormalizeScore) for
// storeBatch (every plugin's) or a decision record (rawNeeded).
func (f *Framework) saveRawScores(n int) {
	if len(f.rawBuf) != len(f.score) {
		f.rawBuf = make([][]int64, len(f.score))
	}
	for pi := range f.score {
		if !f.rawNeeded(pi) {
			f.rawBuf[pi] = f.rawBuf[pi][:0]
			continue
		}
		if cap(f.rawBuf[pi]) < n {
			f.rawBuf[pi] = make([]int64, n)
		}
		f.rawBuf[pi] = f.rawBuf[pi][:n]
		for j := range n {
			f.rawBuf[pi][j] = f.scoreBuf[pi][j].Score
		}
	}
}

// storeBatch keeps the ranking of a full pass (feasible nodes with their raw scores in
// f.rawBuf, rejected ones with their verdicts in diag) for the next pods of signature sig.
func (f *Framework) storeBatch(sig []byte, state *framework.CycleState, numNodes, evaluated int, feasible []*framework.NodeInfo, diag *Diagnosis) error {
	b := &batch{sig: sig, created: time.Now(), numNodes: numNodes, listVersion: f.nodeListVersion(),
		skipFilter: maps.Clone(state.SkipFilterPlugins), skipScore: maps.Clone(state.SkipScorePlugins),
		want: len(feasible), evaluated: evaluated}
	b.nodes = make([]batchNode, 0, len(feasible)+len(diag.NodeToStatus))
	for j, ni := range feasible {
		raw := make([]int64, len(f.score))
		for pi := range f.score {
			raw[pi] = f.rawBuf[pi][j]
		}
		b.nodes = append(b.nodes, batchNode{ni: ni, gen: ni.Generation, raw: raw})
	}
	for name, s := range diag.NodeToStatus {
		ni, err := f.opts.Lister.Get(name)
		if err != nil {
			f.batch = nil
			return fmt.Errorf("batch: %w", err)
		}
		b.nodes = append(b.nodes, batchNode{ni: ni, gen: ni.Generation, status: s})
	}
	f.batch = b
	return nil
}
