// Package interpodaffinity is the InterPodAffinity plugin: required pod affinity and
// anti-affinity (of the incoming pod, and the anti-affinity of pods already running)
// filter nodes by topology domain; preferred terms (and running pods' terms that match
// the incoming pod) score them.
//
// namespaceSelector is honoured when empty (all namespaces); a non-empty
// namespaceSelector would need namespace labels, which the scheduler does not watch,
// and matches only the namespaces listed in namespaces.
package interpodaffinity

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/match"
)

// Name of the plugin.
const Name = "InterPodAffinity"

// Upstream's reasons.
const (
	ErrReasonExistingAntiAffinityRulesNotMatch = "node(s) didn't satisfy existing pods anti-affinity rules"
	ErrReasonAffinityRulesNotMatch             = "node(s) didn't match pod affinity rules"
	ErrReasonAntiAffinityRulesNotMatch         = "node(s) didn't match pod anti-affinity rules"
)

// Args are the plugin's args.
type Args struct {
	// HardPodAffinityWeight is the score weight of running pods' required affinity
	// terms that match the incoming pod (default 1, 0..100).
	HardPodAffinityWeight *int32 `json:"hardPodAffinityWeight,omitempty"`
}

// InterPodAffinity implements PreFilter (+extensions), Filter, PreScore and Score.
type InterPodAffinity struct {
	h          framework.Handle
	hardWeight int64
}

// New is the factory.
func New(_ context.Context, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(Name, raw, &a); err != nil {
		return nil, err
	}
	pl := &InterPodAffinity{h: h, hardWeight: 1}
	if a.HardPodAffinityWeight != nil {
		if *a.HardPodAffinityWeight < 0 || *a.HardPodAffinityWeight > 100 {
			return nil, fmt.Errorf("args of plugin %s: hardPodAffinityWeight: must be in 0..100, got %d", Name, *a.HardPodAffinityWeight)
		}
		pl.hardWeight = int64(*a.HardPodAffinityWeight)
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*InterPodAffinity) Name() string { return Name }

type term struct {
	key        string
	selector   labels.Selector
	namespaces map[string]bool
	all        bool
	weight     int64
}

func (t *term) matches(p *v1.Pod) bool {
	if !t.all && !t.namespaces[p.Namespace] {
		return false
	}
	return t.selector.Matches(labels.Set(p.Labels))
}

func newTerm(owner *v1.Pod, at *v1.PodAffinityTerm, weight int32) (term, error) {
	sel, err := match.Selector(at.LabelSelector)
	if err != nil {
		return term{}, fmt.Errorf("pod %s/%s: affinity term labelSelector: %w", owner.Namespace, owner.Name, err)
	}
	t := term{key: at.TopologyKey, selector: sel, weight: int64(weight), namespaces: map[string]bool{}}
	for _, ns := range at.Namespaces {
		t.namespaces[ns] = true
	}
	if at.NamespaceSelector != nil && len(at.NamespaceSelector.MatchLabels) == 0 && len(at.NamespaceSelector.MatchExpressions) == 0 {
		t.all = true
	}
	if len(at.Namespaces) == 0 && at.NamespaceSelector == nil {
		t.namespaces[owner.Namespace] = true
	}
	return t, nil
}

type podTerms struct {
	affinity, antiAffinity                   []term
	preferredAffinity, preferredAntiAffinity []term
}

func termsOf(p *v1.Pod) (podTerms, error) {
	var pt podTerms
	a := p.Spec.Affinity
	if a == nil {
		return pt, nil
	}
	add := func(dst *[]term, at *v1.PodAffinityTerm, w int32) error {
		t, err := newTerm(p, at, w)
		if err != nil {
			return err
		}
		*dst = append(*dst, t)
		return nil
	}
	if pa := a.PodAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			if err := add(&pt.affinity, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i], 1); err != nil {
				return pt, err
			}
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			w := pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
			if err := add(&pt.preferredAffinity, &w.PodAffinityTerm, w.Weight); err != nil {
				return pt, err
			}
		}
	}
	if pa := a.PodAntiAffinity; pa != nil {
		for i := range pa.RequiredDuringSchedulingIgnoredDuringExecution {
			if err := add(&pt.antiAffinity, &pa.RequiredDuringSchedulingIgnoredDuringExecution[i], 1); err != nil {
				return pt, err
			}
		}
		for i := range pa.PreferredDuringSchedulingIgnoredDuringExecution {
			w := pa.PreferredDuringSchedulingIgnoredDuringExecution[i]
			if err := add(&pt.preferredAntiAffinity, &w.PodAffinityTerm, w.Weight); err != nil {
				return pt, err
			}
		}
	}
	return pt, nil
}

type pair struct{ key, value string }

type counts map[pair]int

func (c counts) clone() counts {
	n := make(counts, len(c))
	for k, v := range c {
		n[k] = v
	}
	return n
}

const preFilterKey framework.StateKey = "PreFilter" + Name

type preFilterState struct {
	terms            podTerms
	existingAnti     counts
	affinityCounts   counts
	antiAffinityCnts counts
}

func (s *preFilterState) Clone() framework.StateData {
	return &preFilterState{terms: s.terms, existingAnti: s.existingAnti.clone(),
		affinityCounts: s.affinityCounts.clone(), antiAffinityCnts: s.antiAffinityCnts.clone()}
}

// PreFilter implements framework.PreFilterPlugin. It Skips when neither the pod nor
// any running pod has a required term that concerns it.
func (pl *InterPodAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	pt, err := termsOf(pod)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	s := &preFilterState{terms: pt, existingAnti: counts{}, affinityCounts: counts{}, antiAffinityCnts: counts{}}
	lister := pl.h.SnapshotSharedLister()
	var withAnti []*framework.NodeInfo
	if l, ok := lister.(interface {
		HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error)
	}); ok {
		withAnti, err = l.HavePodsWithRequiredAntiAffinityList()
	} else {
		withAnti, err = lister.HavePodsWithAffinityList()
	}
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	for _, ni := range withAnti {
		for _, ep := range ni.PodsWithRequiredAntiAffinity {
			s.addExisting(pod, ep, ni, 1)
		}
	}
	if len(pt.affinity) > 0 || len(pt.antiAffinity) > 0 {
		all, err := lister.List()
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		for _, ni := range all {
			for _, ep := range ni.Pods {
				s.addIncoming(ep.Pod, ni, 1)
			}
		}
	}
	if len(s.existingAnti) == 0 && len(pt.affinity) == 0 && len(pt.antiAffinity) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

// addExisting counts a running pod's required anti-affinity terms that match pod.
func (s *preFilterState) addExisting(pod *v1.Pod, ep *framework.PodInfo, ni *framework.NodeInfo, delta int) {
	if !ep.HasRequiredAntiAffinity() {
		return
	}
	et, err := termsOf(ep.Pod)
	if err != nil {
		return
	}
	for i := range et.antiAffinity {
		t := &et.antiAffinity[i]
		if v, ok := ni.Node().Labels[t.key]; ok && t.matches(pod) {
			s.existingAnti[pair{t.key, v}] += delta
		}
	}
}

// addIncoming counts a running pod against the incoming pod's required terms.
func (s *preFilterState) addIncoming(ep *v1.Pod, ni *framework.NodeInfo, delta int) {
	n := ni.Node()
	for i := range s.terms.affinity {
		t := &s.terms.affinity[i]
		if v, ok := n.Labels[t.key]; ok && t.matches(ep) {
			s.affinityCounts[pair{t.key, v}] += delta
		}
	}
	for i := range s.terms.antiAffinity {
		t := &s.terms.antiAffinity[i]
		if v, ok := n.Labels[t.key]; ok && t.matches(ep) {
			s.antiAffinityCnts[pair{t.key, v}] += delta
		}
	}
}

// PreFilterExtensions implements framework.PreFilterExtender.
func (pl *InterPodAffinity) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if d, ok := state.Read(preFilterKey); ok {
		s := d.(*preFilterState)
		s.addExisting(pod, add, ni, 1)
		s.addIncoming(add.Pod, ni, 1)
	}
	return nil
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *InterPodAffinity) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if d, ok := state.Read(preFilterKey); ok {
		s := d.(*preFilterState)
		s.addExisting(pod, rm, ni, -1)
		s.addIncoming(rm.Pod, ni, -1)
	}
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *InterPodAffinity) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, ok := state.Read(preFilterKey)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: PreFilter state missing", Name))
	}
	s := d.(*preFilterState)
	n := ni.Node()
	// Look the node's own labels up in the counts (as upstream) rather than walk every
	// counted pair for every node.
	for k, v := range n.Labels {
		if s.existingAnti[pair{k, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch)
		}
	}
	for i := range s.terms.antiAffinity {
		t := &s.terms.antiAffinity[i]
		if v, ok := n.Labels[t.key]; ok && s.antiAffinityCnts[pair{t.key, v}] > 0 {
			return framework.NewStatus(framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch)
		}
	}
	if len(s.terms.affinity) > 0 {
		exist := true
		for i := range s.terms.affinity {
			t := &s.terms.affinity[i]
			v, ok := n.Labels[t.key]
			if !ok {
				return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
			}
			if s.affinityCounts[pair{t.key, v}] <= 0 {
				exist = false
			}
		}
		if !exist {
			// The first pod of a group with affinity to itself may go anywhere with
			// the topology keys.
			if len(s.affinityCounts) == 0 && matchesAll(s.terms.affinity, pod) {
				return nil
			}
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch)
		}
	}
	return nil
}

func matchesAll(ts []term, p *v1.Pod) bool {
	for i := range ts {
		if !ts[i].matches(p) {
			return false
		}
	}
	return true
}

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct {
	scores map[string]map[string]int64
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin.
func (pl *InterPodAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	pt, err := termsOf(pod)
	if err != nil {
		return framework.AsStatus(err)
	}
	hasPreferred := len(pt.preferredAffinity) > 0 || len(pt.preferredAntiAffinity) > 0
	lister := pl.h.SnapshotSharedLister()
	var nodes []*framework.NodeInfo
	if hasPreferred {
		nodes, err = lister.List()
	} else {
		nodes, err = lister.HavePodsWithAffinityList()
	}
	if err != nil {
		return framework.AsStatus(err)
	}
	if !hasPreferred && len(nodes) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{scores: map[string]map[string]int64{}}
	add := func(key, value string, w int64) {
		m := s.scores[key]
		if m == nil {
			m = map[string]int64{}
			s.scores[key] = m
		}
		m[value] += w
	}
	for _, ni := range nodes {
		n := ni.Node()
		pods := ni.PodsWithAffinity
		if hasPreferred {
			pods = ni.Pods
		}
		for _, ep := range pods {
			for i := range pt.preferredAffinity {
				t := &pt.preferredAffinity[i]
				if v, ok := n.Labels[t.key]; ok && t.matches(ep.Pod) {
					add(t.key, v, t.weight)
				}
			}
			for i := range pt.preferredAntiAffinity {
				t := &pt.preferredAntiAffinity[i]
				if v, ok := n.Labels[t.key]; ok && t.matches(ep.Pod) {
					add(t.key, v, -t.weight)
				}
			}
			if !ep.HasAffinity() {
				continue
			}
			et, err := termsOf(ep.Pod)
			if err != nil {
				continue
			}
			if pl.hardWeight > 0 {
				for i := range et.affinity {
					t := &et.affinity[i]
					if v, ok := n.Labels[t.key]; ok && t.matches(pod) {
						add(t.key, v, pl.hardWeight)
					}
				}
			}
			for i := range et.preferredAffinity {
				t := &et.preferredAffinity[i]
				if v, ok := n.Labels[t.key]; ok && t.matches(pod) {
					add(t.key, v, t.weight)
				}
			}
			for i := range et.preferredAntiAffinity {
				t := &et.preferredAntiAffinity[i]
				if v, ok := n.Labels[t.key]; ok && t.matches(pod) {
					add(t.key, v, -t.weight)
				}
			}
		}
	}
	if len(s.scores) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements framework.ScorePlugin.
func (pl *InterPodAffinity) Score(_ context.Context, state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, ok := state.Read(preScoreKey)
	if !ok {
		return 0, nil
	}
	var score int64
	for key, vals := range d.(*preScoreState).scores {
		if v, ok := ni.Node().Labels[key]; ok {
			score += vals[v]
		}
	}
	return score, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions: min..max maps to 0..100.
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	if _, ok := state.Read(preScoreKey); !ok {
		return nil
	}
	var lo int64 = math.MaxInt64
	var hi int64 = math.MinInt64
	for _, s := range scores {
		lo = min(lo, s.Score)
		hi = max(hi, s.Score)
	}
	for i := range scores {
		if hi-lo > 0 {
			scores[i].Score = framework.MaxNodeScore * (scores[i].Score - lo) / (hi - lo)
		} else {
			scores[i].Score = 0
		}
	}
	return nil
}

// SignPod implements framework.SignPlugin. A pod with pod (anti-)affinity of its own is
// unsignable, as upstream's: its verdicts depend on where the pods it names run. Without
// any, only existing pods' terms can judge it, and they match its labels and namespace,
// which are its signature; placing it adds no term that could judge the next one.
func (*InterPodAffinity) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if a := pod.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
		return nil, framework.Unsignable("pods with pod affinity or anti-affinity are not signable")
	}
	return []framework.SignFragment{
		{Key: framework.LabelsSignerName, Value: pod.Labels},
		{Key: framework.NamespaceSignerName, Value: pod.Namespace},
	}, nil
}
