package tainttoleration

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func taint(k, v string, e v1.TaintEffect) v1.Taint { return v1.Taint{Key: k, Value: v, Effect: e} }

func TestFilter(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	for _, tc := range []struct {
		name   string
		taints []v1.Taint
		tols   []v1.Toleration
		want   string
	}{
		{"no taints", nil, nil, ""},
		{"NoSchedule untolerated", []v1.Taint{taint("k", "v", v1.TaintEffectNoSchedule)}, nil, "node(s) had untolerated taint {k: v}"},
		{"NoExecute untolerated", []v1.Taint{taint("k", "v", v1.TaintEffectNoExecute)}, nil, "node(s) had untolerated taint {k: v}"},
		{"PreferNoSchedule does not filter", []v1.Taint{taint("k", "v", v1.TaintEffectPreferNoSchedule)}, nil, ""},
		{"Equal toleration", []v1.Taint{taint("k", "v", v1.TaintEffectNoSchedule)}, []v1.Toleration{{Key: "k", Value: "v", Effect: v1.TaintEffectNoSchedule}}, ""},
		{"wrong value", []v1.Taint{taint("k", "v", v1.TaintEffectNoSchedule)}, []v1.Toleration{{Key: "k", Value: "w"}}, "node(s) had untolerated taint {k: v}"},
		{"Exists any effect", []v1.Taint{taint("k", "v", v1.TaintEffectNoExecute)}, []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}, ""},
		{"effect mismatch", []v1.Taint{taint("k", "v", v1.TaintEffectNoExecute)}, []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, "node(s) had untolerated taint {k: v}"},
		{"second taint untolerated", []v1.Taint{taint("a", "1", v1.TaintEffectNoSchedule), taint("b", "2", v1.TaintEffectNoSchedule)}, []v1.Toleration{{Key: "a", Operator: v1.TolerationOpExists}}, "node(s) had untolerated taint {b: 2}"},
	} {
		n := pt.Node("n", "1", "1Gi")
		n.Spec.Taints = tc.taints
		p := pt.Pod("p", "", "")
		p.Spec.Tolerations = tc.tols
		st := pl.(*TaintToleration).Filter(context.Background(), nil, p, pt.NodeInfo(n))
		if st.Message() != tc.want || (tc.want != "" && st.Code() != framework.UnschedulableAndUnresolvable) {
			t.Errorf("%s: %v %q, want %q", tc.name, st.Code(), st.Message(), tc.want)
		}
	}
}

func TestScore(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	clean := pt.Node("clean", "1", "1Gi")
	one := pt.Node("one", "1", "1Gi")
	one.Spec.Taints = []v1.Taint{taint("a", "", v1.TaintEffectPreferNoSchedule)}
	two := pt.Node("two", "1", "1Gi")
	two.Spec.Taints = []v1.Taint{taint("a", "", v1.TaintEffectPreferNoSchedule), taint("b", "", v1.TaintEffectPreferNoSchedule)}
	s := pt.Snapshot([]*v1.Node{clean, one, two})
	got, st := pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), pt.Pod("p", "", ""), s)
	if !st.IsSuccess() || got["clean"] != 100 || got["one"] != 50 || got["two"] != 0 {
		t.Fatalf("scores %v %v, want clean 100, one 50, two 0", got, st)
	}
	p := pt.Pod("p", "", "")
	p.Spec.Tolerations = []v1.Toleration{{Key: "b", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectPreferNoSchedule}}
	got, _ = pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), p, s)
	if got["clean"] != 100 || got["one"] != 0 || got["two"] != 0 {
		t.Fatalf("with a toleration of b: %v, want clean 100, one 0, two 0", got)
	}
}
