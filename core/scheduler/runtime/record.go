package runtime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// The decision explorer's record of a scheduling cycle (docs/explorer.md). A cycle copies
// only what it would otherwise lose (the reused score buffers, for the best
// Options.RecordNodes nodes) into a Capture; the record's matrix is built from it when
// the record is read (Capture.Attempt, from explorer.Ring), so the cycle pays for two
// allocations and a few hundred integer copies, and no formatting.

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

// recordColumns are the matrix's columns, the same for every cycle of a Framework
// (built at its first capture): a cycle's Capture points at them instead of copying.
type recordColumns struct {
	filter     []framework.Plugin
	score      []framework.Plugin
	weights    []int64
	normalizes []bool // the Score plugin has NormalizeScore: its raw score is kept
}

func (f *Framework) columns() *recordColumns {
	if f.cols != nil {
		return f.cols
	}
	c := &recordColumns{}
	for _, p := range f.filter {
		c.filter = append(c.filter, p.p)
	}
	for _, p := range f.score {
		c.score = append(c.score, p.p)
		c.weights = append(c.weights, p.weight)
		c.normalizes = append(c.normalizes, p.p.ScoreExtensions() != nil)
	}
	f.cols = c
	return c
}

// Capture is one cycle's copy of what its record needs: numbers and names in flat
// arrays, and references to what the cycle no longer changes (the rejected nodes'
// statuses, the explanation's sorted names and counts). Everything else is done by
// Attempt when the record is read.
type Capture struct {
	cols                    *recordColumns
	profile                 string
	pod                     explorerv1.ObjectRef
	skipFilter, skipScore   map[string]struct{}
	nodes, evaluated, feas  int
	rows                    []string // feasible nodes kept, best first
	totals                  []int64  // [row]
	weighted, raw           []int64  // [row*len(score)+plugin]; raw nil when not kept
	rejected                framework.NodeToStatusMap
	rejectedNames           []string // the rejected rows: the first nodes by name
	rejectCounts            []RejectCount
	preFilter               *framework.Status
	result, message, chosen string
	truncated               int
	timings                 []explorerv1.Timing
	// summaryOnly: sampled out under load, the cycle copied no matrix (SummaryOnly).
	summaryOnly bool
}

// SummaryOnly tells that the cycle copied only what the record's summary needs (it was
// sampled out under load, Options.RecordWhole): build it with Summary, not Attempt.
func (c *Capture) SummaryOnly() bool { return c.summaryOnly }

// capture copies a cycle for its record; nil unless Options.RecordNodes > 0. idx are
// the best feasible nodes (indices into feasible, scores and totals), best first;
// rejected are the Explanation's rejected node names, sorted.
func (f *Framework) capture(e *Explanation, pod *v1.Pod, state *framework.CycleState, all, evaluated int, feasible []*framework.NodeInfo, scores []framework.NodeScoreList, totals []int64, idx []int, diag Diagnosis, rejected []string) *Capture {
	k := f.opts.RecordNodes
	if k <= 0 {
		return nil
	}
	cols := f.columns()
	c := &Capture{cols: cols, profile: f.profile, pod: explorerv1.ObjectRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)},
		nodes: all, evaluated: evaluated, feas: len(feasible), result: explorerv1.ResultScheduled,
		rejected: diag.NodeToStatus, rejectedNames: rejected[:min(k, len(rejected))], rejectCounts: e.RejectCounts}
	c.truncated = len(rejected) - len(c.rejectedNames)
	if state != nil {
		c.skipFilter, c.skipScore = state.SkipFilterPlugins, state.SkipScorePlugins
	}
	if tm, ok := f.opts.Metrics.(*timingMetrics); ok {
		c.timings = tm.take(f.cycles.Load())
	}
	if totals != nil && !f.whole {
		c.summaryOnly = true
		return c
	}
	if totals == nil {
		c.rows = make([]string, 0, min(k, len(feasible)))
		for _, ni := range feasible[:min(k, len(feasible))] {
			c.rows = append(c.rows, ni.Node().Name)
		}
		c.truncated += len(feasible) - len(c.rows)
		return c
	}
	idx = idx[:min(k, len(idx))]
	np := len(scores)
	rawBuf := f.rawScores(len(scores), len(feasible))
	// One array for the numbers: totals, weighted scores, raw scores.
	width := 1 + np
	if rawBuf != nil {
		width += np
	}
	nums := make([]int64, len(idx)*width)
	c.totals, nums = nums[:len(idx)], nums[len(idx):]
	c.weighted, nums = nums[:len(idx)*np], nums[len(idx)*np:]
	if rawBuf != nil {
		c.raw = nums
	}
	c.rows = make([]string, len(idx))
	for r, i := range idx {
		c.rows[r] = feasible[i].Node().Name
		c.totals[r] = totals[i]
		w := c.weighted[r*np : (r+1)*np]
		for pi := range scores {
			w[pi] = scores[pi][i].Score
		}
		if rawBuf != nil {
			rw := c.raw[r*np : (r+1)*np]
			for pi, rs := range rawBuf {
				if len(rs) > i { // kept for the plugins that normalize
					rw[pi] = rs[i]
				}
			}
		}
	}
	c.truncated += len(feasible) - len(idx)
	return c
}

// captureFailure copies an unschedulable cycle.
func (f *Framework) captureFailure(e *Explanation, state *framework.CycleState, fe *FitError, evaluated int, rejected []string) *Capture {
	c := f.capture(e, fe.Pod, state, fe.NumAllNodes, evaluated, nil, nil, nil, nil, fe.Diagnosis, rejected)
	if c == nil {
		return nil
	}
	c.result, c.message = explorerv1.ResultUnschedulable, fe.Error()
	if fe.Diagnosis.PreFilterMsg != "" {
		for _, st := range fe.Diagnosis.NodeToStatus {
			c.preFilter = st
			break
		}
		c.rejected, c.rejectedNames, c.truncated = nil, nil, 0
	}
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

// Summary builds the record's SchedulingAttempt without its matrix, timings and reject
// counts: what a reader that is behind gets (explorer.Ring.Behind). It runs when the
// record is read.
func (c *Capture) Summary(attempt int, d time.Duration, postFilter *explorerv1.PostFilterResult) explorerv1.SchedulingAttempt {
	return explorerv1.SchedulingAttempt{Pod: c.pod, Attempt: attempt, Profile: c.profile, Result: c.result, Message: c.message,
		Node: c.chosen, Nodes: c.nodes, Evaluated: c.evaluated, Feasible: c.feas,
		PostFilter: postFilter, DurationNanos: d.Nanoseconds()}
}

// Attempt builds the record's SchedulingAttempt. It runs when the record is read.
func (c *Capture) Attempt(attempt int, d time.Duration, postFilter *explorerv1.PostFilterResult) explorerv1.SchedulingAttempt {
	a := c.Summary(attempt, d, postFilter)
	a.TruncatedNodes, a.Timings = c.truncated, c.timings
	cols := c.cols
	col := func(p framework.Plugin, weight int64) explorerv1.Plugin {
		out := explorerv1.Plugin{Name: p.Name(), Weight: weight}
		if w, ok := p.(WasmModule); ok {
			path, digest := w.WasmModule()
			out.Wasm = &explorerv1.Module{Path: path, Digest: digest}
		}
		return out
	}
	a.FilterPlugins = make([]explorerv1.Plugin, 0, len(cols.filter))
	for _, p := range cols.filter {
		a.FilterPlugins = append(a.FilterPlugins, col(p, 0))
	}
	a.ScorePlugins = make([]explorerv1.Plugin, 0, len(cols.score))
	for i, p := range cols.score {
		a.ScorePlugins = append(a.ScorePlugins, col(p, cols.weights[i]))
	}
	for _, rc := range c.rejectCounts {
		a.RejectCounts = append(a.RejectCounts, explorerv1.RejectCount{Plugin: rc.Plugin, Reason: rc.Reason, Count: rc.Count})
	}
	if c.preFilter != nil {
		a.PreFilter = &explorerv1.PluginVerdict{Plugin: c.preFilter.Plugin(), Verdict: c.preFilter.Code().String(), Reason: c.preFilter.Message()}
	}
	pass := make([]explorerv1.FilterVerdict, len(cols.filter))
	for i, p := range cols.filter {
		pass[i] = explorerv1.FilterVerdict{Verdict: explorerv1.VerdictPass}
		if _, skip := c.skipFilter[p.Name()]; skip {
			pass[i].Verdict = explorerv1.VerdictSkip
		}
	}
	np := len(cols.score)
	a.Matrix = make([]explorerv1.MatrixRow, 0, len(c.rows)+len(c.rejectedNames))
	var scores []explorerv1.Score // one array for every row's scores
	if c.totals != nil {
		scores = make([]explorerv1.Score, len(c.rows)*np)
	}
	for r, node := range c.rows {
		row := explorerv1.MatrixRow{Node: node, Chosen: node == c.chosen, Filter: pass}
		if c.totals != nil {
			row.Final = c.totals[r]
			row.Scores = scores[r*np : (r+1)*np : (r+1)*np]
			for pi := range np {
				w := c.weighted[r*np+pi]
				s := explorerv1.Score{Weighted: w}
				if cols.weights[pi] != 0 {
					s.Normalized = w / cols.weights[pi]
				}
				s.Raw = s.Normalized
				if c.raw != nil && cols.normalizes[pi] {
					s.Raw = c.raw[r*np+pi]
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
	for _, node := range c.rejectedNames {
		st := c.rejected[node]
		row := explorerv1.MatrixRow{Node: node, Filter: make([]explorerv1.FilterVerdict, len(cols.filter))}
		at := -1
		for i, p := range cols.filter {
			if p.Name() == st.Plugin() {
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
				row.Filter[i] = explorerv1.FilterVerdict{Verdict: verdictOf(st), Reason: st.Message()}
			}
		}
		if at < 0 {
			// Rejected before Filter (the PreFilter result's node set), or by a plugin
			// not in the columns.
			row.Rejected = &explorerv1.PluginVerdict{Plugin: st.Plugin(), Verdict: verdictOf(st), Reason: st.Message()}
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
