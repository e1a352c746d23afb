package podtopologyspread

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func spread(p *v1.Pod, key string, skew int32, when v1.UnsatisfiableConstraintAction) *v1.Pod {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
	})
	return p
}

// Three zones: a has 2 matching pods, b has 1, c has none; node "nolabel" lacks the key.
func cluster() ([]*v1.Node, []*v1.Pod) {
	nodes := []*v1.Node{
		pt.Node("a1", "4", "8Gi", "zone", "a"), pt.Node("a2", "4", "8Gi", "zone", "a"),
		pt.Node("b1", "4", "8Gi", "zone", "b"), pt.Node("c1", "4", "8Gi", "zone", "c"),
		pt.Node("nolabel", "4", "8Gi"),
	}
	pods := []*v1.Pod{
		pt.On(pt.Pod("x1", "", "", "app", "x"), "a1"), pt.On(pt.Pod("x2", "", "", "app", "x"), "a2"),
		pt.On(pt.Pod("x3", "", "", "app", "x"), "b1"), pt.On(pt.Pod("other", "", "", "app", "y"), "c1"),
	}
	return nodes, pods
}

func TestFilter(t *testing.T) {
	nodes, pods := cluster()
	s := pt.Snapshot(nodes, pods...)
	pl, _ := New(context.Background(), nil, pt.Handle{S: s})
	ps := pl.(*PodTopologySpread)
	for _, tc := range []struct {
		skew int32
		want map[string]string // node → reason ("" fits)
	}{
		{1, map[string]string{"a1": ErrReasonConstraintsNotMatch, "a2": ErrReasonConstraintsNotMatch, "b1": ErrReasonConstraintsNotMatch, "c1": "", "nolabel": ErrReasonNodeLabelNotMatch}},
		{2, map[string]string{"a1": ErrReasonConstraintsNotMatch, "b1": "", "c1": ""}},
		{3, map[string]string{"a1": "", "b1": "", "c1": ""}},
	} {
		p := spread(pt.Pod("new", "", "", "app", "x"), "zone", tc.skew, v1.DoNotSchedule)
		state := framework.NewCycleState()
		if _, st := ps.PreFilter(context.Background(), state, p); !st.IsSuccess() {
			t.Fatal(st)
		}
		for node, want := range tc.want {
			ni, _ := s.Get(node)
			if got := ps.Filter(context.Background(), state, p, ni); got.Message() != want {
				t.Errorf("maxSkew %d, node %s: %q, want %q", tc.skew, node, got.Message(), want)
			}
		}
	}
	// A pod the selector does not match does not count itself.
	p := spread(pt.Pod("new", "", "", "app", "z"), "zone", 1, v1.DoNotSchedule)
	state := framework.NewCycleState()
	ps.PreFilter(context.Background(), state, p)
	ni, _ := s.Get("b1")
	if st := ps.Filter(context.Background(), state, p, ni); !st.IsSuccess() {
		t.Fatalf("non-matching pod on b1 (skew 1-0=1): %v", st)
	}
	// Skip without hard constraints.
	if _, st := ps.PreFilter(context.Background(), framework.NewCycleState(), pt.Pod("plain", "", "")); !st.IsSkip() {
		t.Fatalf("pod without constraints: %v, want Skip", st)
	}
}

func TestMinDomains(t *testing.T) {
	nodes, pods := cluster()
	s := pt.Snapshot(nodes, pods...)
	pl, _ := New(context.Background(), nil, pt.Handle{S: s})
	p := spread(pt.Pod("new", "", "", "app", "x"), "zone", 2, v1.DoNotSchedule)
	four := int32(4)
	p.Spec.TopologySpreadConstraints[0].MinDomains = &four
	state := framework.NewCycleState()
	pl.(*PodTopologySpread).PreFilter(context.Background(), state, p)
	// 3 domains < minDomains 4: the global minimum is taken as 0, so b (1+1-0=2) fits
	// and a (2+1-0=3) does not.
	for node, fits := range map[string]bool{"a1": false, "b1": true, "c1": true} {
		ni, _ := s.Get(node)
		if st := pl.(*PodTopologySpread).Filter(context.Background(), state, p, ni); st.IsSuccess() != fits {
			t.Errorf("node %s: %v, want fits=%v", node, st, fits)
		}
	}
}

func TestScore(t *testing.T) {
	nodes, pods := cluster()
	s := pt.Snapshot(nodes, pods...)
	pl, _ := New(context.Background(), nil, pt.Handle{S: s})
	p := spread(pt.Pod("new", "", "", "app", "x"), "zone", 1, v1.ScheduleAnyway)
	got, st := pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), p, s)
	if !st.IsSuccess() {
		t.Fatal(st)
	}
	if !(got["c1"] > got["b1"] && got["b1"] > got["a1"]) || got["c1"] != 100 || got["nolabel"] != 0 {
		t.Fatalf("scores %v: want c1 (0 pods) = 100 > b1 (1) > a1 (2), nolabel 0", got)
	}
	if st := pl.(*PodTopologySpread).PreScore(context.Background(), framework.NewCycleState(), pt.Pod("plain", "", ""), nil); !st.IsSkip() {
		t.Fatalf("pod without soft constraints: %v, want Skip", st)
	}
}
