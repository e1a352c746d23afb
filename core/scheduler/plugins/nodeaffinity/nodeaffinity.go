// Package nodeaffinity is the NodeAffinity plugin: spec.nodeSelector and required node
// affinity filter nodes; preferred node affinity terms score them by the sum of the
// weights of the terms they match.
package nodeaffinity

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/match"
)

// Name of the plugin.
const Name = "NodeAffinity"

// ErrReasonPod is upstream's reason.
const ErrReasonPod = "node(s) didn't match Pod's node affinity/selector"

// Args are the plugin's args.
type Args struct {
	// AddedAffinity is required and preferred node affinity applied to every pod of
	// the profile on top of its own.
	AddedAffinity *v1.NodeAffinity `json:"addedAffinity,omitempty"`
}

// NodeAffinity implements PreFilter, Filter, PreScore and Score.
type NodeAffinity struct{ args Args }

// New is the factory.
func New(_ context.Context, raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	pl := &NodeAffinity{}
	if err := framework.DecodeArgs(Name, raw, &pl.args); err != nil {
		return nil, err
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*NodeAffinity) Name() string { return Name }

const preFilterKey framework.StateKey = "PreFilter" + Name

type preFilterState struct{ added bool }

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin. When the required terms name nodes
// by metadata.name, only those nodes are evaluated (upstream's shortcut for
// DaemonSet-style pods). Pods with no node constraints Skip Filter.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	req := required(pod)
	addedReq := pl.args.AddedAffinity != nil && pl.args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil
	if len(pod.Spec.NodeSelector) == 0 && req == nil && !addedReq {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, &preFilterState{added: addedReq})
	if req == nil {
		return nil, nil
	}
	// Each term must name nodes for the shortcut to apply.
	names := map[string]struct{}{}
	for _, t := range req.NodeSelectorTerms {
		found := false
		for _, f := range t.MatchFields {
			if f.Key == "metadata.name" && f.Operator == v1.NodeSelectorOpIn {
				found = true
				for _, v := range f.Values {
					names[v] = struct{}{}
				}
			}
		}
		if !found {
			return nil, nil
		}
	}
	if len(names) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

func required(pod *v1.Pod) *v1.NodeSelector {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
}

// Filter implements framework.FilterPlugin.
func (pl *NodeAffinity) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	n := node.Node()
	if pl.args.AddedAffinity != nil && pl.args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil &&
		!match.NodeSelectorTerms(n, pl.args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't match scheduler-enforced node affinity")
	}
	if !match.NodeSelector(pod, n) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonPod)
	}
	return nil
}

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct{ terms []v1.PreferredSchedulingTerm }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin; pods without preferred terms Skip.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var terms []v1.PreferredSchedulingTerm
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		terms = append(terms, a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if pl.args.AddedAffinity != nil {
		terms = append(terms, pl.args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution...)
	}
	if len(terms) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, &preScoreState{terms: terms})
	return nil
}

// Score implements framework.ScorePlugin: the sum of the weights of matching terms.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	d, ok := state.Read(preScoreKey)
	if !ok {
		return 0, nil
	}
	var s int64
	for i := range d.(*preScoreState).terms {
		t := &d.(*preScoreState).terms[i]
		if t.Weight != 0 && match.NodeSelectorTerm(node.Node(), &t.Preference) {
			s += int64(t.Weight)
		}
	}
	return s, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions.
func (*NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, false, scores)
}

// SignPod implements framework.SignPlugin: verdicts and scores depend on the pod's
// nodeSelector and node affinity (the added affinity of the args is the profile's).
func (*NodeAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.NodeAffinitySignerName, Value: framework.NodeAffinitySigner(pod)}}, nil
}
