// Package podtopologyspread is the PodTopologySpread plugin: pods with
// topologySpreadConstraints are kept within maxSkew of the least loaded domain
// (DoNotSchedule constraints, Filter), or steered towards it (ScheduleAnyway, Score).
package podtopologyspread

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/match"
)

// Name of the plugin.
const Name = "PodTopologySpread"

// Upstream's reasons.
const (
	ErrReasonConstraintsNotMatch = "node(s) didn't match pod topology spread constraints"
	ErrReasonNodeLabelNotMatch   = ErrReasonConstraintsNotMatch + " (missing required label)"
)

// Defaulting types of the args, as upstream.
const (
	SystemDefaulting = "System"
	ListDefaulting   = "List"
)

// Args are the plugin's args.
type Args struct {
	// DefaultingType is System (default: upstream's built-in default constraints) or
	// List (DefaultConstraints). Defaults apply to pods without constraints of their own
	// and take their label selector from the Services selecting the pod and the
	// ReplicaSet owning it.
	DefaultingType     string                        `json:"defaultingType,omitempty"`
	DefaultConstraints []v1.TopologySpreadConstraint `json:"defaultConstraints,omitempty"`
}

// systemDefaultConstraints are upstream's: spread softly over hosts and zones.
var systemDefaultConstraints = []v1.TopologySpreadConstraint{
	{TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: v1.LabelTopologyZone, WhenUnsatisfiable: v1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread implements PreFilter (+extensions), Filter, PreScore and Score.
type PodTopologySpread struct {
	h        framework.Handle
	defaults []v1.TopologySpreadConstraint
	services corelisters.ServiceLister
	rsets    appslisters.ReplicaSetLister
}

// New is the factory. Default constraints need the handle's informers (for Services
// and ReplicaSets); without them only the pods' own constraints apply.
func New(_ context.Context, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(Name, raw, &a); err != nil {
		return nil, err
	}
	pl := &PodTopologySpread{h: h}
	switch a.DefaultingType {
	case "", SystemDefaulting:
		if len(a.DefaultConstraints) > 0 {
			return nil, fmt.Errorf("args of plugin %s: defaultConstraints: only with defaultingType %s", Name, ListDefaulting)
		}
		pl.defaults = systemDefaultConstraints
	case ListDefaulting:
		for i, c := range a.DefaultConstraints {
			if c.LabelSelector != nil {
				return nil, fmt.Errorf("args of plugin %s: defaultConstraints[%d].labelSelector: must not be set (it comes from the pod's Services and ReplicaSet)", Name, i)
			}
			if c.MaxSkew <= 0 || c.TopologyKey == "" || (c.WhenUnsatisfiable != v1.DoNotSchedule && c.WhenUnsatisfiable != v1.ScheduleAnyway) {
				return nil, fmt.Errorf("args of plugin %s: defaultConstraints[%d]: needs maxSkew > 0, topologyKey and whenUnsatisfiable DoNotSchedule or ScheduleAnyway", Name, i)
			}
		}
		pl.defaults = a.DefaultConstraints
	default:
		return nil, fmt.Errorf("args of plugin %s: defaultingType: %q is not %s or %s", Name, a.DefaultingType, SystemDefaulting, ListDefaulting)
	}
	if ih, ok := h.(framework.InformerHandle); ok && ih.SharedInformerFactory() != nil && len(pl.defaults) > 0 {
		f := ih.SharedInformerFactory()
		pl.services = f.Core().V1().Services().Lister()
		pl.rsets = f.Apps().V1().ReplicaSets().Lister()
	}
	return pl, nil
}

// podConstraints is the pod's own constraints, or, when it has none, the defaults with
// the selector of its Services and ReplicaSet (none when that selector is empty).
func (pl *PodTopologySpread) podConstraints(pod *v1.Pod) []v1.TopologySpreadConstraint {
	if len(pod.Spec.TopologySpreadConstraints) > 0 || pl.services == nil {
		return pod.Spec.TopologySpreadConstraints
	}
	sel := pl.defaultSelector(pod)
	if sel == nil {
		return nil
	}
	out := make([]v1.TopologySpreadConstraint, len(pl.defaults))
	for i, c := range pl.defaults {
		c.LabelSelector = sel
		out[i] = c
	}
	return out
}

// defaultSelector merges the selectors of the Services that select the pod and of the
// ReplicaSet that controls it (upstream's DefaultSelector; wasmkube serves neither
// StatefulSets nor ReplicationControllers).
func (pl *PodTopologySpread) defaultSelector(pod *v1.Pod) *metav1.LabelSelector {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	if svcs, err := pl.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
		for _, svc := range svcs {
			if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				continue
			}
			for k, v := range svc.Spec.Selector {
				sel.MatchLabels[k] = v
			}
		}
	}
	if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && owner.Kind == "ReplicaSet" && strings.HasPrefix(owner.APIVersion, "apps/") {
		if rs, err := pl.rsets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil && rs.Spec.Selector != nil {
			for k, v := range rs.Spec.Selector.MatchLabels {
				sel.MatchLabels[k] = v
			}
			sel.MatchExpressions = append(sel.MatchExpressions, rs.Spec.Selector.MatchExpressions...)
		}
	}
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return nil
	}
	return sel
}

// Name implements framework.Plugin.
func (*PodTopologySpread) Name() string { return Name }

type constraint struct {
	maxSkew       int32
	key           string
	selector      labels.Selector
	minDomains    int32
	honorAffinity bool
	honorTaints   bool
}

func constraints(pod *v1.Pod, all []v1.TopologySpreadConstraint, action v1.UnsatisfiableConstraintAction) ([]constraint, error) {
	var out []constraint
	for _, c := range all {
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := match.Selector(c.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: topologySpreadConstraints labelSelector: %w", pod.Namespace, pod.Name, err)
		}
		if len(c.MatchLabelKeys) > 0 && c.LabelSelector != nil {
			for _, k := range c.MatchLabelKeys {
				if v, ok := pod.Labels[k]; ok {
					r, err := labels.NewRequirement(k, "=", []string{v})
					if err != nil {
						return nil, fmt.Errorf("pod %s/%s: topologySpreadConstraints matchLabelKeys %q: %w", pod.Namespace, pod.Name, k, err)
					}
					sel = sel.Add(*r)
				}
			}
		}
		cc := constraint{maxSkew: c.MaxSkew, key: c.TopologyKey, selector: sel, minDomains: 1,
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == v1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == v1.NodeInclusionPolicyHonor}
		if c.MinDomains != nil {
			cc.minDomains = *c.MinDomains
		}
		out = append(out, cc)
	}
	return out, nil
}

// nodeCounts reports whether pods on node count for constraint c (inclusion policies).
func (c *constraint) nodeCounts(pod *v1.Pod, node *v1.Node) bool {
	if c.honorAffinity && !match.NodeSelector(pod, node) {
		return false
	}
	if c.honorTaints {
		if _, bad := match.FirstUntolerated(node.Spec.Taints, pod.Spec.Tolerations, func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}); bad {
			return false
		}
	}
	return true
}

func hasAllKeys(node *v1.Node, cs []constraint) bool {
	for i := range cs {
		if _, ok := node.Labels[cs[i].key]; !ok {
			return false
		}
	}
	return true
}

func countMatching(pods []*framework.PodInfo, sel labels.Selector, ns string) int {
	n := 0
	for _, p := range pods {
		if p.Pod.Namespace == ns && p.Pod.DeletionTimestamp == nil && sel.Matches(labels.Set(p.Pod.Labels)) {
			n++
		}
	}
	return n
}

const preFilterKey framework.StateKey = "PreFilter" + Name

type preFilterState struct {
	cs     []constraint
	counts []map[string]int
}

func (s *preFilterState) Clone() framework.StateData {
	c := &preFilterState{cs: s.cs, counts: make([]map[string]int, len(s.counts))}
	for i, m := range s.counts {
		c.counts[i] = make(map[string]int, len(m))
		for k, v := range m {
			c.counts[i][k] = v
		}
	}
	return c
}

// minMatch is the smallest count over the domains (0 when there are fewer domains
// than minDomains).
func (s *preFilterState) minMatch(i int) int {
	m := s.counts[i]
	if int32(len(m)) < s.cs[i].minDomains {
		return 0
	}
	best := math.MaxInt
	for _, v := range m {
		best = min(best, v)
	}
	if best == math.MaxInt {
		return 0
	}
	return best
}

// PreFilter implements framework.PreFilterPlugin: it counts matching pods per domain
// over every node that counts. Pods without DoNotSchedule constraints Skip.
func (pl *PodTopologySpread) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	cs, err := constraints(pod, pl.podConstraints(pod), v1.DoNotSchedule)
	if err != nil {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
	}
	if len(cs) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	nodes, err := pl.h.SnapshotSharedLister().List()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	s := &preFilterState{cs: cs, counts: make([]map[string]int, len(cs))}
	for i := range cs {
		s.counts[i] = map[string]int{}
	}
	for _, ni := range nodes {
		n := ni.Node()
		if !hasAllKeys(n, cs) {
			continue
		}
		for i := range cs {
			if !cs[i].nodeCounts(pod, n) {
				continue
			}
			s.counts[i][n.Labels[cs[i].key]] += countMatching(ni.Pods, cs[i].selector, pod.Namespace)
		}
	}
	state.Write(preFilterKey, s)
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterExtender.
func (pl *PodTopologySpread) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, pod *v1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, add, ni, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, pod *v1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	return pl.update(state, pod, rm, ni, -1)
}

func (pl *PodTopologySpread) update(state *framework.CycleState, pod *v1.Pod, other *framework.PodInfo, ni *framework.NodeInfo, delta int) *framework.Status {
	d, ok := state.Read(preFilterKey)
	if !ok {
		return nil
	}
	s := d.(*preFilterState)
	n := ni.Node()
	if !hasAllKeys(n, s.cs) || other.Pod.Namespace != pod.Namespace {
		return nil
	}
	for i := range s.cs {
		if s.cs[i].nodeCounts(pod, n) && s.cs[i].selector.Matches(labels.Set(other.Pod.Labels)) {
			s.counts[i][n.Labels[s.cs[i].key]] += delta
		}
	}
	return nil
}

// Filter implements framework.FilterPlugin.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	d, ok := state.Read(preFilterKey)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: PreFilter state missing", Name))
	}
	s := d.(*preFilterState)
	n := ni.Node()
	for i := range s.cs {
		c := &s.cs[i]
		val, ok := n.Labels[c.key]
		if !ok {
			return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch)
		}
		self := 0
		if c.selector.Matches(labels.Set(pod.Labels)) {
			self = 1
		}
		skew := s.counts[i][val] + self - s.minMatch(i)
		if skew > int(c.maxSkew) {
			return framework.NewStatus(framework.Unschedulable, ErrReasonConstraintsNotMatch)
		}
	}
	return nil
}

const preScoreKey framework.StateKey = "PreScore" + Name

type preScoreState struct {
	cs      []constraint
	counts  []map[string]int
	weights []float64
	ignored map[string]bool
}

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin; pods without ScheduleAnyway
// constraints Skip.
func (pl *PodTopologySpread) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, filtered []*framework.NodeInfo) *framework.Status {
	cs, err := constraints(pod, pl.podConstraints(pod), v1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(cs) == 0 {
		return framework.NewStatus(framework.Skip)
	}
	s := &preScoreState{cs: cs, counts: make([]map[string]int, len(cs)), weights: make([]float64, len(cs)), ignored: map[string]bool{}}
	domains := make([]map[string]bool, len(cs))
	for i := range cs {
		s.counts[i] = map[string]int{}
		domains[i] = map[string]bool{}
	}
	for _, ni := range filtered {
		n := ni.Node()
		if !hasAllKeys(n, cs) {
			s.ignored[n.Name] = true
			continue
		}
		for i := range cs {
			domains[i][n.Labels[cs[i].key]] = true
		}
	}
	for i := range cs {
		s.weights[i] = math.Log(float64(len(domains[i]) + 2))
	}
	all, err := pl.h.SnapshotSharedLister().List()
	if err != nil {
		return framework.AsStatus(err)
	}
	for _, ni := range all {
		n := ni.Node()
		if !hasAllKeys(n, cs) {
			continue
		}
		for i := range cs {
			if cs[i].key == v1.LabelHostname || !cs[i].nodeCounts(pod, n) {
				continue
			}
			v := n.Labels[cs[i].key]
			if domains[i][v] {
				s.counts[i][v] += countMatching(ni.Pods, cs[i].selector, pod.Namespace)
			}
		}
	}
	state.Write(preScoreKey, s)
	return nil
}

// Score implements framework.ScorePlugin: the weighted count of matching pods in the
// node's domains (fewer is better; NormalizeScore reverses it).
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	d, ok := state.Read(preScoreKey)
	if !ok {
		return 0, nil
	}
	s := d.(*preScoreState)
	n := ni.Node()
	if s.ignored[n.Name] {
		return 0, nil
	}
	var score float64
	for i := range s.cs {
		c := &s.cs[i]
		v, ok := n.Labels[c.key]
		if !ok {
			continue
		}
		var cnt int
		if c.key == v1.LabelHostname {
			cnt = countMatching(ni.Pods, c.selector, pod.Namespace)
		} else {
			cnt = s.counts[i][v]
		}
		score += float64(cnt)*s.weights[i] + float64(c.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions as upstream: the node with the
// fewest matching pods scores 100; nodes without the topology keys score 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	d, ok := state.Read(preScoreKey)
	if !ok {
		return nil
	}
	s := d.(*preScoreState)
	var minS int64 = math.MaxInt64
	var maxS int64
	for _, sc := range scores {
		if s.ignored[sc.Name] {
			continue
		}
		minS = min(minS, sc.Score)
		maxS = max(maxS, sc.Score)
	}
	for i := range scores {
		switch {
		case s.ignored[scores[i].Name]:
			scores[i].Score = 0
		case maxS == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (maxS + minS - scores[i].Score) / maxS
		}
	}
	return nil
}

// SignPod implements framework.SignPlugin. Spreading is not a matter of one pod and one
// node: placing a pod changes the skew every node of its domains sees. A pod with
// constraints, its own or the defaults its Services and ReplicaSet give it, is
// unsignable, as upstream's; a pod without any is signed by nothing here.
func (pl *PodTopologySpread) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	if len(pl.podConstraints(pod)) > 0 {
		return nil, framework.Unsignable("pods with topology spread constraints are not signable")
	}
	return nil, nil
}
