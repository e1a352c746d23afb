package runtime

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Diagnosis is why a pod fit nowhere: each rejected node's verdict and the plugins
// that rejected (the queue retries the pod on events those plugins care about).
type Diagnosis struct {
	NodeToStatus         framework.NodeToStatusMap
	UnschedulablePlugins map[string]struct{}
	// PreFilterMsg is set when a PreFilter plugin rejected the pod for every node.
	PreFilterMsg string
	// PostFilterMsg is what PostFilter (preemption) said.
	PostFilterMsg string
}

// FitError is returned by SchedulePod when no node fits.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Error is upstream's message, assembled from the plugins' reasons:
// "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu. preemption: ...".
func (e *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", e.NumAllNodes)
	if e.Diagnosis.PreFilterMsg != "" {
		msg += " " + e.Diagnosis.PreFilterMsg + "."
	} else {
		msg += " " + strings.Join(ReasonHistogram(e.Diagnosis.NodeToStatus), ", ") + "."
	}
	if e.Diagnosis.PostFilterMsg != "" {
		msg += " " + e.Diagnosis.PostFilterMsg
	}
	return msg
}

// ReasonHistogram counts nodes per reason and formats "<count> <reason>", sorted as
// upstream sorts them (as strings).
func ReasonHistogram(m framework.NodeToStatusMap) []string {
	counts := map[string]int{}
	for _, s := range m {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	out := make([]string, 0, len(counts))
	for r, c := range counts {
		out = append(out, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(out)
	return out
}

// Explanation is what one scheduling cycle decided for a pod and why, kept small
// enough to live in a pod annotation: the score of each Score plugin for the best
// nodes, and the Filter verdicts that rejected others.
type Explanation struct {
	Profile string `json:"profile"`
	Time    string `json:"time"`
	// Result is "Scheduled" or "Unschedulable".
	Result  string `json:"result"`
	Node    string `json:"node,omitempty"`
	Message string `json:"message,omitempty"`
	// Nodes in the snapshot, evaluated by Filter, and found feasible.
	Nodes     int `json:"nodes"`
	Evaluated int `json:"evaluated"`
	Feasible  int `json:"feasible"`
	// FilterPlugins ran on every evaluated node; each top node passed all of them
	// (except those in SkippedFilter, which had nothing to check for this pod).
	FilterPlugins []string `json:"filterPlugins,omitempty"`
	SkippedFilter []string `json:"skippedFilter,omitempty"`
	// ScorePlugins gives the order of NodeExplanation.Scores, with weights.
	ScorePlugins []config.Plugin   `json:"scorePlugins,omitempty"`
	SkippedScore []string          `json:"skippedScore,omitempty"`
	Top          []NodeExplanation `json:"top,omitempty"`
	Rejected     []Rejection       `json:"rejected,omitempty"`
	RejectCounts []RejectCount     `json:"rejectCounts,omitempty"`

	// capture is the cycle's copy for the decision explorer (record.go).
	capture *Capture
}

// NodeExplanation is one of the best nodes: each Score plugin's normalized score times
// its weight, and the total.
type NodeExplanation struct {
	Node   string  `json:"node"`
	Total  int64   `json:"total"`
	Scores []int64 `json:"scores,omitempty"`
}

// Rejection is one node's Filter verdict.
type Rejection struct {
	Node   string `json:"node"`
	Plugin string `json:"plugin"`
	Code   string `json:"code"`
	Reason string `json:"reason"`
}

// RejectCount is how many nodes one plugin rejected for one reason.
type RejectCount struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
	Count  int    `json:"count"`
}

func (f *Framework) explain(pod *v1.Pod, all, evaluated int, feasible []*framework.NodeInfo, scores []framework.NodeScoreList, totals []int64, diag Diagnosis) *Explanation {
	k := f.opts.ExplainTopNodes
	if k <= 0 {
		return nil
	}
	e := &Explanation{Profile: f.profile, Time: time.Now().UTC().Format(time.RFC3339), Result: "Scheduled",
		Nodes: all, Evaluated: evaluated, Feasible: len(feasible)}
	for _, p := range f.filter {
		e.FilterPlugins = append(e.FilterPlugins, p.p.Name())
	}
	f.fillSkipped(e, nil)
	var idx []int
	if totals != nil {
		e.ScorePlugins = f.pointNames[config.Score]
		// One top-k for the explanation and the decision record (a prefix each).
		idx = topK(totals, max(k, f.opts.RecordNodes))
		for _, i := range idx[:min(k, len(idx))] {
			ne := NodeExplanation{Node: feasible[i].Node().Name, Total: totals[i], Scores: make([]int64, len(scores))}
			for pi := range scores {
				ne.Scores[pi] = scores[pi][i].Score
			}
			e.Top = append(e.Top, ne)
		}
	} else {
		for _, ni := range feasible {
			e.Top = append(e.Top, NodeExplanation{Node: ni.Node().Name})
		}
	}
	rejected := addRejections(e, diag.NodeToStatus, k)
	e.capture = f.capture(e, pod, nil, all, evaluated, feasible, scores, totals, idx, diag, rejected)
	return e
}

func (f *Framework) fillSkipped(e *Explanation, state *framework.CycleState) {
	if state == nil {
		return
	}
	for _, p := range f.filter {
		if _, ok := state.SkipFilterPlugins[p.p.Name()]; ok {
			e.SkippedFilter = append(e.SkippedFilter, p.p.Name())
		}
	}
	for _, p := range f.score {
		if _, ok := state.SkipScorePlugins[p.p.Name()]; ok {
			e.SkippedScore = append(e.SkippedScore, p.p.Name())
		}
	}
}

// ExplainFailure builds the explanation of an unschedulable pod from its FitError.
func (f *Framework) ExplainFailure(state *framework.CycleState, fe *FitError, evaluated int) *Explanation {
	k := f.opts.ExplainTopNodes
	if k <= 0 {
		return nil
	}
	e := &Explanation{Profile: f.profile, Time: time.Now().UTC().Format(time.RFC3339), Result: "Unschedulable",
		Message: fe.Error(), Nodes: fe.NumAllNodes, Evaluated: evaluated}
	for _, p := range f.filter {
		e.FilterPlugins = append(e.FilterPlugins, p.p.Name())
	}
	f.fillSkipped(e, state)
	rejected := addRejections(e, fe.Diagnosis.NodeToStatus, k)
	e.capture = f.captureFailure(e, state, fe, evaluated, rejected)
	return e
}

// Annotate adds the cycle's skipped plugins to an explanation built by SchedulePod.
func (f *Framework) Annotate(e *Explanation, state *framework.CycleState) {
	if e != nil {
		f.fillSkipped(e, state)
		if e.capture != nil && state != nil {
			e.capture.skipFilter, e.capture.skipScore = state.SkipFilterPlugins, state.SkipScorePlugins
		}
	}
}

// addRejections lists the first k rejected nodes by name and the counts per plugin and
// reason in e; it returns every rejected node's name, sorted (the decision record takes
// its rows from them).
func addRejections(e *Explanation, m framework.NodeToStatusMap, k int) []string {
	if len(m) == 0 {
		return nil
	}
	type key struct{ plugin, reason string }
	counts := map[key]int{}
	names := make([]string, 0, len(m))
	for name, s := range m {
		names = append(names, name)
		for _, r := range s.Reasons() {
			counts[key{s.Plugin(), r}]++
		}
	}
	sort.Strings(names)
	for _, name := range names[:min(k, len(names))] {
		s := m[name]
		e.Rejected = append(e.Rejected, Rejection{Node: name, Plugin: s.Plugin(), Code: s.Code().String(), Reason: s.Message()})
	}
	for kk, c := range counts {
		e.RejectCounts = append(e.RejectCounts, RejectCount{Plugin: kk.plugin, Reason: kk.reason, Count: c})
	}
	sort.Slice(e.RejectCounts, func(i, j int) bool {
		a, b := e.RejectCounts[i], e.RejectCounts[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Plugin+a.Reason < b.Plugin+b.Reason
	})
	if len(e.RejectCounts) > 20 {
		e.RejectCounts = e.RejectCounts[:20]
	}
	return names
}

// topK returns the indices of the k largest totals, best first.
func topK(totals []int64, k int) []int {
	idx := make([]int, 0, k+1)
	for i, t := range totals {
		if len(idx) == k && t <= totals[idx[k-1]] {
			continue
		}
		pos := sort.Search(len(idx), func(j int) bool { return totals[idx[j]] < t })
		idx = append(idx, 0)
		copy(idx[pos+1:], idx[pos:])
		idx[pos] = i
		if len(idx) > k {
			idx = idx[:k]
		}
	}
	return idx
}
