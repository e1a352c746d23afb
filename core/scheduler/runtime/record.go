package runtime

import (
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// The decision explorer's record of a scheduling cycle (docs/explorer.md). A cycle copies
// only what it would otherwise lose (the reused score buffers, for the best
// Options.RecordNodes nodes) into a Capture; the record's matrix is built from it later,
// on the recorder's goroutine (Capture.Attempt), so the cycle pays for a few slice copies
// and no formatting.

// WasmModule is implemented by wasm plugins: the module's path (or OCI reference) and
// digest, which the record shows beside the plugin's name.
type WasmModule interface {
	WasmModule() (path, digest string)
}

// timingMetrics keeps the plugin timings of the cycle being measured (the sampled cycles,
// one in ten, as the metrics are) for its record, and passes them on to the metrics.
type timingMetrics struct {
	Metrics
	f       *Framework
	mu      sync.Mutex
	cycle   int64
	timings []explorerv1.Timing
}

func (m *timingMetrics) ObservePlugin(point, plugin string, code framework.Code, d time.Duration) {
	m.Metrics.ObservePlugin(point, plugin, code, d)
	cycle := m.f.cycles.Load()
	m.mu.Lock()
	if m.cycle != cycle {
		m.cycle, m.timings = cycle, nil
	}
	m.timings = append(m.timings, explorerv1.Timing{Point: point, Plugin: plugin, Nanos: d.Nanoseconds()})
	m.mu.Unlock()
}

// take returns the timings of cycle (nil when it was not measured).
func (m *timingMetrics) take(cycle int64) []explorerv1.Timing {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cycle != cycle {
		return nil
	}
	t := m.timings
	m.timings = nil
	return t
}

// recordTimings makes a recording framework keep its sampled cycles' plugin timings.
func (f *Framework) recordTimings() {
	if f.opts.RecordNodes > 0 && f.opts.Metrics != nil {
		f.opts.Metrics = &timingMetrics{Metrics: f.opts.Metrics, f: f}
	}
}

// Capture is one cycle's copy of what its record needs.
type Capture struct {
	profile                 string
	pod                     explorerv1.ObjectRef
	filter, score           []framework.Plugin
	weights                 []int64
	skipFilter, skipScore   map[string]struct{}
	nodes, evaluated, feas  int
	rows                    []string  // feasible nodes kept, best first
	weighted, raw           [][]int64 // [row][score plugin]; raw nil when not kept
	totals                  []int64
	rejected                []rejectedNode
	preFilter               *framework.Status
	result, message, chosen string
	truncated               int
	timings                 []explorerv1.Timing
}

type rejectedNode struct {
	node string
	st   *framework.Status
}

// capture copies a cycle for its record; nil unless Options.RecordNodes > 0. scores and
// totals are indexed by feasible node (scores by plugin first); raw scores come from
// rawScores when the cycle kept them.
func (f *Framework) capture(pod *v1.Pod, state *framework.CycleState, all, evaluated int, feasible []*framework.NodeInfo, scores []framework.NodeScoreList, totals []int64, diag Diagnosis) *Capture {
	k := f.opts.RecordNodes
	if k <= 0 {
		return nil
	}
	c := &Capture{profile: f.profile, pod: explorerv1.ObjectRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)},
		nodes: all, evaluated: evaluated, feas: len(feasible), result: explorerv1.ResultScheduled}
	for _, p := range f.filter {
		c.filter = append(c.filter, p.p)
	}
	for _, p := range f.score {
		c.score = append(c.score, p.p)
		c.weights = append(c.weights, p.weight)
	}
	if state != nil {
		c.skipFilter, c.skipScore = state.SkipFilterPlugins, state.SkipScorePlugins
	}
	if tm, ok := f.opts.Metrics.(*timingMetrics); ok {
		c.timings = tm.take(f.cycles.Load())
	}
	if totals != nil {
		idx := topK(totals, k)
		rawBuf := f.rawScores(len(scores), len(feasible))
		np := len(scores)
		// One backing array per kind of score: a cycle pays a few allocations, not two
		// per row.
		ws := make([]int64, len(idx)*np)
		var rs []int64
		if rawBuf != nil {
			rs = make([]int64, len(idx)*np)
			c.raw = make([][]int64, 0, len(idx))
		}
		c.rows, c.totals, c.weighted = make([]string, 0, len(idx)), make([]int64, 0, len(idx)), make([][]int64, 0, len(idx))
		for r, i := range idx {
			c.rows = append(c.rows, feasible[i].Node().Name)
			c.totals = append(c.totals, totals[i])
			w := ws[r*np : (r+1)*np]
			for pi := range scores {
				w[pi] = scores[pi][i].Score
			}
			c.weighted = append(c.weighted, w)
			if rawBuf != nil {
				rw := rs[r*np : (r+1)*np]
				for pi := range scores {
					rw[pi] = rawBuf[pi][i]
				}
				c.raw = append(c.raw, rw)
			}
		}
		c.truncated = len(feasible) - len(idx)
	} else {
		for _, ni := range feasible[:min(k, len(feasible))] {
			c.rows = append(c.rows, ni.Node().Name)
		}
		c.truncated = len(feasible) - len(c.rows)
	}
	c.addRejected(diag, k)
	return c
}

func (c *Capture) addRejected(diag Diagnosis, k int) {
	for name, st := range diag.NodeToStatus {
		if len(c.rejected) == k {
			c.truncated += len(diag.NodeToStatus) - k
			break
		}
		c.rejected = append(c.rejected, rejectedNode{name, st})
	}
}

// captureFailure copies an unschedulable cycle.
func (f *Framework) captureFailure(state *framework.CycleState, fe *FitError, evaluated int) *Capture {
	c := f.capture(fe.Pod, state, fe.NumAllNodes, evaluated, nil, nil, nil, Diagnosis{})
	if c == nil {
		return nil
	}
	c.result, c.message = explorerv1.ResultUnschedulable, fe.Error()
	if fe.Diagnosis.PreFilterMsg != "" {
		for _, st := range fe.Diagnosis.NodeToStatus {
			c.preFilter = st
			break
		}
		return c
	}
	c.addRejected(fe.Diagnosis, f.opts.RecordNodes)
	return c
}

// Capture is the cycle's copy for the decision explorer (nil when not recording).
func (e *Explanation) Capture() *Capture {
	if e == nil {
		return nil
	}
	return e.capture
}

// SetOutcome sets what the rest of the cycle decided: the node the pod was assumed on,
// or why it was not (a Reserve or Permit rejection after a node was picked).
func (c *Capture) SetOutcome(result, node, message string) {
	c.result, c.chosen, c.message = result, node, message
}

// Attempt builds the record's SchedulingAttempt. It runs on the recorder's goroutine.
func (c *Capture) Attempt(attempt int, d time.Duration, postFilter *explorerv1.PostFilterResult) explorerv1.SchedulingAttempt {
	a := explorerv1.SchedulingAttempt{Pod: c.pod, Attempt: attempt, Profile: c.profile, Result: c.result, Message: c.message,
		Node: c.chosen, Nodes: c.nodes, Evaluated: c.evaluated, Feasible: c.feas, TruncatedNodes: c.truncated,
		PostFilter: postFilter, DurationNanos: d.Nanoseconds(), Timings: c.timings}
	col := func(p framework.Plugin, weight int64) explorerv1.Plugin {
		out := explorerv1.Plugin{Name: p.Name(), Weight: weight}
		if w, ok := p.(WasmModule); ok {
			path, digest := w.WasmModule()
			out.Wasm = &explorerv1.Module{Path: path, Digest: digest}
		}
		return out
	}
	for _, p := range c.filter {
		a.FilterPlugins = append(a.FilterPlugins, col(p, 0))
	}
	for i, p := range c.score {
		a.ScorePlugins = append(a.ScorePlugins, col(p, c.weights[i]))
	}
	if c.preFilter != nil {
		a.PreFilter = &explorerv1.PluginVerdict{Plugin: c.preFilter.Plugin(), Verdict: c.preFilter.Code().String(), Reason: c.preFilter.Message()}
	}
	pass := make([]explorerv1.FilterVerdict, len(c.filter))
	for i, p := range c.filter {
		pass[i] = explorerv1.FilterVerdict{Verdict: explorerv1.VerdictPass}
		if _, skip := c.skipFilter[p.Name()]; skip {
			pass[i].Verdict = explorerv1.VerdictSkip
		}
	}
	for r, node := range c.rows {
		row := explorerv1.MatrixRow{Node: node, Chosen: node == c.chosen, Filter: pass}
		if r < len(c.weighted) {
			row.Final = c.totals[r]
			row.Scores = make([]explorerv1.Score, len(c.score))
			for pi := range c.score {
				w := c.weighted[r][pi]
				s := explorerv1.Score{Weighted: w}
				if c.weights[pi] != 0 {
					s.Normalized = w / c.weights[pi]
				}
				s.Raw = s.Normalized
				if r < len(c.raw) {
					s.Raw = c.raw[r][pi]
				}
				row.Scores[pi] = s
			}
		}
		a.Matrix = append(a.Matrix, row)
	}
	// The chosen node first among equals (ties are broken at random).
	for i := range a.Matrix {
		if a.Matrix[i].Chosen {
			m := a.Matrix[i]
			copy(a.Matrix[1:i+1], a.Matrix[:i])
			a.Matrix[0] = m
			break
		}
	}
	sort.Slice(c.rejected, func(i, j int) bool { return c.rejected[i].node < c.rejected[j].node })
	for _, rj := range c.rejected {
		row := explorerv1.MatrixRow{Node: rj.node, Filter: make([]explorerv1.FilterVerdict, len(c.filter))}
		at := -1
		for i, p := range c.filter {
			if p.Name() == rj.st.Plugin() {
				at = i
			}
		}
		for i := range row.Filter {
			switch {
			case at < 0 || i > at:
				row.Filter[i] = explorerv1.FilterVerdict{Verdict: explorerv1.VerdictNotRun}
			case i < at:
				row.Filter[i] = pass[i]
			default:
				row.Filter[i] = explorerv1.FilterVerdict{Verdict: verdictOf(rj.st), Reason: rj.st.Message()}
			}
		}
		if at < 0 {
			// Rejected before Filter (the PreFilter result's node set), or by a plugin
			// not in the columns.
			row.Rejected = &explorerv1.PluginVerdict{Plugin: rj.st.Plugin(), Verdict: verdictOf(rj.st), Reason: rj.st.Message()}
		}
		a.Matrix = append(a.Matrix, row)
	}
	return a
}

func verdictOf(st *framework.Status) string {
	switch st.Code() {
	case framework.Unschedulable:
		return explorerv1.VerdictUnschedulable
	case framework.UnschedulableAndUnresolvable:
		return explorerv1.VerdictUnresolvable
	case framework.Error:
		return explorerv1.VerdictError
	case framework.Skip:
		return explorerv1.VerdictSkip
	}
	return st.Code().String()
}
