// Package defaultpreemption is the DefaultPreemption plugin (PostFilter): when no node
// fits a pod, it looks for a node where evicting lower-priority pods would make room,
// picks the node whose evictions hurt least, deletes those pods, and nominates the node
// (status.nominatedNodeName) so the room is kept for the pod while the victims stop.
//
// PodDisruptionBudgets are not consulted (the scheduler does not watch them).
package defaultpreemption

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "DefaultPreemption"

// Args are the plugin's args (upstream's, with its defaults).
type Args struct {
	// MinCandidateNodesPercentage of the nodes are tried at least (default 10).
	MinCandidateNodesPercentage *int32 `json:"minCandidateNodesPercentage,omitempty"`
	// MinCandidateNodesAbsolute nodes are tried at least (default 100).
	MinCandidateNodesAbsolute *int32 `json:"minCandidateNodesAbsolute,omitempty"`
}

// DefaultPreemption implements PostFilter.
type DefaultPreemption struct {
	h        framework.PreemptionHandle
	pct, abs int32
}

// New is the factory; the handle must be a framework.PreemptionHandle.
func New(_ context.Context, raw json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(Name, raw, &a); err != nil {
		return nil, err
	}
	ph, ok := h.(framework.PreemptionHandle)
	if !ok {
		return nil, fmt.Errorf("plugin %s needs a runtime that can simulate filters", Name)
	}
	pl := &DefaultPreemption{h: ph, pct: 10, abs: 100}
	if a.MinCandidateNodesPercentage != nil {
		if *a.MinCandidateNodesPercentage < 0 || *a.MinCandidateNodesPercentage > 100 {
			return nil, fmt.Errorf("args of plugin %s: minCandidateNodesPercentage: must be in 0..100, got %d", Name, *a.MinCandidateNodesPercentage)
		}
		pl.pct = *a.MinCandidateNodesPercentage
	}
	if a.MinCandidateNodesAbsolute != nil {
		if *a.MinCandidateNodesAbsolute < 0 {
			return nil, fmt.Errorf("args of plugin %s: minCandidateNodesAbsolute: must not be negative", Name)
		}
		pl.abs = *a.MinCandidateNodesAbsolute
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*DefaultPreemption) Name() string { return Name }

// Upstream's words.
const (
	reasonNotHelpful = "Preemption is not helpful for scheduling"
	reasonNoVictims  = "No preemption victims found for incoming pod"
)

// Candidate is a node and the pods that would be evicted there.
type Candidate struct {
	Node    string
	Victims []*v1.Pod
}

// PostFilter implements framework.PostFilterPlugin.
func (pl *DefaultPreemption) PostFilter(ctx context.Context, state *framework.CycleState, pod *v1.Pod, m framework.NodeToStatusMap) (*framework.PostFilterResult, *framework.Status) {
	if msg, ok := pl.eligible(pod); !ok {
		return nil, framework.NewStatus(framework.Unschedulable, "preemption: "+msg)
	}
	nodes, err := pl.h.SnapshotSharedLister().List()
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	cands, hist := pl.FindCandidates(ctx, state, pod, nodes, m)
	if len(cands) == 0 {
		return nil, framework.NewStatus(framework.Unschedulable, fmt.Sprintf("preemption: 0/%d nodes are available: %s.", len(nodes), strings.Join(hist, ", ")))
	}
	best := PickOne(cands)
	if err := pl.prepare(ctx, best, pod); err != nil {
		return nil, framework.AsStatus(err)
	}
	return &framework.PostFilterResult{NominatedNodeName: best.Node}, nil
}

// eligible is upstream's PodEligibleToPreemptOthers: not with preemptionPolicy Never,
// and not again while lower-priority pods on its nominated node are still terminating.
func (pl *DefaultPreemption) eligible(pod *v1.Pod) (string, bool) {
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return "not eligible due to preemptionPolicy=Never.", false
	}
	if nn := pod.Status.NominatedNodeName; nn != "" {
		if ni, err := pl.h.SnapshotSharedLister().Get(nn); err == nil {
			prio := framework.PodPriority(pod)
			for _, p := range ni.Pods {
				if p.Pod.DeletionTimestamp != nil && framework.PodPriority(p.Pod) < prio {
					return "not eligible due to a terminating pod on the nominated node.", false
				}
			}
		}
	}
	return "", true
}

// FindCandidates tries nodes that rejected the pod with a resolvable verdict, starting
// at a random offset, until enough candidates are found. The second result is the
// reason histogram for the failure message.
func (pl *DefaultPreemption) FindCandidates(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, m framework.NodeToStatusMap) ([]Candidate, []string) {
	reasons := map[string]int{}
	var potential []*framework.NodeInfo
	for _, ni := range nodes {
		s, ok := m[ni.Node().Name]
		if ok && s.Code() == framework.UnschedulableAndUnresolvable {
			reasons[reasonNotHelpful]++
			continue
		}
		potential = append(potential, ni)
	}
	want := max(int(pl.abs), len(potential)*int(pl.pct)/100)
	var cands []Candidate
	if len(potential) > 0 {
		off := rand.IntN(len(potential))
		for i := 0; i < len(potential) && len(cands) < want; i++ {
			ni := potential[(off+i)%len(potential)]
			victims, st := pl.SelectVictims(ctx, state.Clone(), pod, ni.Clone())
			if !st.IsSuccess() {
				for _, r := range st.Reasons() {
					reasons[r]++
				}
				continue
			}
			cands = append(cands, Candidate{Node: ni.Node().Name, Victims: victims})
		}
	}
	var hist []string
	for r, c := range reasons {
		hist = append(hist, fmt.Sprintf("%d %s", c, r))
	}
	sort.Strings(hist)
	return cands, hist
}

// SelectVictims removes every lower-priority pod from ni (a clone), checks the pod then
// fits, and puts back as many as still allow it, most important first. It returns the
// pods that must go, or, as upstream, why the node is no candidate: "No preemption
// victims found for incoming pod" when nothing is lower, else the Filter verdict that
// still rejects the pod with every lower pod gone.
func (pl *DefaultPreemption) SelectVictims(ctx context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) ([]*v1.Pod, *framework.Status) {
	prio := framework.PodPriority(pod)
	var lower []*framework.PodInfo
	for _, p := range ni.Pods {
		if framework.PodPriority(p.Pod) < prio {
			lower = append(lower, p)
		}
	}
	if len(lower) == 0 {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, reasonNoVictims)
	}
	for _, p := range lower {
		if err := ni.RemovePod(p.Pod); err != nil {
			return nil, framework.AsStatus(err)
		}
		if s := pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni); !s.IsSuccess() {
			return nil, s
		}
	}
	if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !s.IsSuccess() {
		return nil, s
	}
	sort.SliceStable(lower, func(i, j int) bool { return moreImportant(lower[i].Pod, lower[j].Pod) })
	var victims []*v1.Pod
	for _, p := range lower {
		ni.AddPodInfo(p)
		if s := pl.h.RunPreFilterExtensionAddPod(ctx, state, pod, p, ni); !s.IsSuccess() {
			return nil, s
		}
		if s := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !s.IsSuccess() {
			_ = ni.RemovePod(p.Pod)
			_ = pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, p, ni)
			victims = append(victims, p.Pod)
		}
	}
	if len(victims) == 0 {
		return nil, framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", ni.Node().Name))
	}
	return victims, nil
}

func moreImportant(a, b *v1.Pod) bool {
	pa, pb := framework.PodPriority(a), framework.PodPriority(b)
	if pa != pb {
		return pa > pb
	}
	return startTime(a).Before(startTime(b))
}

func startTime(p *v1.Pod) *metav1.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime
	}
	return &p.CreationTimestamp
}

// PickOne chooses among candidates as upstream (PodDisruptionBudgets aside): the
// lowest highest-victim priority, then the lowest sum of priorities, then the fewest
// victims, then the latest start among the highest-priority victims, then the first.
func PickOne(cands []Candidate) Candidate {
	best := 0
	for i := 1; i < len(cands); i++ {
		if better(cands[i], cands[best]) {
			best = i
		}
	}
	return cands[best]
}

func better(a, b Candidate) bool {
	ha, hb := highest(a.Victims), highest(b.Victims)
	if ha != hb {
		return ha < hb
	}
	sa, sb := prioritySum(a.Victims), prioritySum(b.Victims)
	if sa != sb {
		return sa < sb
	}
	if len(a.Victims) != len(b.Victims) {
		return len(a.Victims) < len(b.Victims)
	}
	ta, tb := earliestOfHighest(a.Victims), earliestOfHighest(b.Victims)
	return tb.Before(ta)
}

func highest(vs []*v1.Pod) int32 {
	h := int32(math.MinInt32)
	for _, v := range vs {
		h = max(h, framework.PodPriority(v))
	}
	return h
}

func prioritySum(vs []*v1.Pod) int64 {
	var s int64
	for _, v := range vs {
		// Shifted so that negative priorities still add up to a positive amount.
		s += int64(framework.PodPriority(v)) + math.MaxInt32 + 1
	}
	return s
}

func earliestOfHighest(vs []*v1.Pod) *metav1.Time {
	h := highest(vs)
	var t *metav1.Time
	for _, v := range vs {
		if framework.PodPriority(v) == h {
			if st := startTime(v); t == nil || st.Before(t) {
				t = st
			}
		}
	}
	return t
}

// prepare evicts the victims (a graceful delete with a UID precondition) and clears the
// nomination of lower-priority pods nominated to the same node, which lose the room.
func (pl *DefaultPreemption) prepare(ctx context.Context, c Candidate, pod *v1.Pod) error {
	cs := pl.h.ClientSet()
	if cs == nil {
		return fmt.Errorf("preempt for pod %s/%s: no API client", pod.Namespace, pod.Name)
	}
	for _, v := range c.Victims {
		uid := v.UID
		// As upstream, the victim learns why it goes before it is deleted.
		cond, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []any{map[string]any{
			"type": v1.DisruptionTarget, "status": v1.ConditionTrue, "reason": v1.PodReasonPreemptionByScheduler,
			"message": "default-scheduler: preempting to accommodate a higher priority pod", "lastTransitionTime": metav1.Now(),
		}}}})
		_, _ = cs.CoreV1().Pods(v.Namespace).Patch(ctx, v.Name, types.StrategicMergePatchType, cond, metav1.PatchOptions{}, "status")
		err := cs.CoreV1().Pods(v.Namespace).Delete(ctx, v.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !isGone(err) {
			return fmt.Errorf("preempt pod %s/%s on node %s for pod %s/%s: %w", v.Namespace, v.Name, c.Node, pod.Namespace, pod.Name, err)
		}
	}
	prio := framework.PodPriority(pod)
	for _, np := range pl.h.NominatedPodsForNode(c.Node) {
		if framework.PodPriority(np.Pod) >= prio || np.Pod.UID == pod.UID {
			continue
		}
		patch := []byte(`{"status":{"nominatedNodeName":null}}`)
		_, _ = cs.CoreV1().Pods(np.Pod.Namespace).Patch(ctx, np.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	}
	return nil
}

func isGone(err error) bool {
	type statusErr interface{ Status() metav1.Status }
	if se, ok := err.(statusErr); ok {
		c := se.Status().Code
		return c == 404 || c == 409
	}
	return false
}
