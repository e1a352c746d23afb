package nodeaffinity

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func req(key string, op v1.NodeSelectorOperator, vals ...string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: key, Operator: op, Values: vals}}}
}

func withRequired(terms ...v1.NodeSelectorTerm) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms}}}
}

func TestFilter(t *testing.T) {
	node := pt.Node("n", "1", "1Gi", "zone", "a", "gen", "5")
	for _, tc := range []struct {
		name     string
		selector map[string]string
		affinity *v1.Affinity
		fits     bool
	}{
		{"nothing", nil, nil, true},
		{"selector match", map[string]string{"zone": "a"}, nil, true},
		{"selector mismatch", map[string]string{"zone": "b"}, nil, false},
		{"selector missing label", map[string]string{"disk": "ssd"}, nil, false},
		{"In", nil, withRequired(req("zone", v1.NodeSelectorOpIn, "a", "b")), true},
		{"NotIn", nil, withRequired(req("zone", v1.NodeSelectorOpNotIn, "a")), false},
		{"NotIn absent label", nil, withRequired(req("disk", v1.NodeSelectorOpNotIn, "hdd")), true},
		{"Exists", nil, withRequired(req("zone", v1.NodeSelectorOpExists)), true},
		{"DoesNotExist", nil, withRequired(req("zone", v1.NodeSelectorOpDoesNotExist)), false},
		{"Gt", nil, withRequired(req("gen", v1.NodeSelectorOpGt, "4")), true},
		{"Lt", nil, withRequired(req("gen", v1.NodeSelectorOpLt, "4")), false},
		{"terms are ORed", nil, withRequired(req("zone", v1.NodeSelectorOpIn, "x"), req("gen", v1.NodeSelectorOpIn, "5")), true},
		{"empty term matches nothing", nil, withRequired(v1.NodeSelectorTerm{}), false},
		{"selector and affinity both", map[string]string{"zone": "a"}, withRequired(req("gen", v1.NodeSelectorOpIn, "6")), false},
		{"matchFields name", nil, withRequired(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n"}}}}), true},
	} {
		pl, _ := New(context.Background(), nil, nil)
		p := pt.Pod("p", "", "")
		p.Spec.NodeSelector = tc.selector
		p.Spec.Affinity = tc.affinity
		st := pl.(*NodeAffinity).Filter(context.Background(), framework.NewCycleState(), p, pt.NodeInfo(node))
		if st.IsSuccess() != tc.fits {
			t.Errorf("%s: %v, want fits=%v", tc.name, st, tc.fits)
		}
		if !tc.fits && (st.Code() != framework.UnschedulableAndUnresolvable || st.Message() != ErrReasonPod) {
			t.Errorf("%s: %v %q", tc.name, st.Code(), st.Message())
		}
	}
}

func TestPreFilter(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	p := pt.Pod("p", "", "")
	if _, st := pl.(*NodeAffinity).PreFilter(context.Background(), framework.NewCycleState(), p); !st.IsSkip() {
		t.Fatalf("a pod without constraints should Skip, got %v", st)
	}
	p.Spec.Affinity = withRequired(v1.NodeSelectorTerm{MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"n1", "n2"}}}})
	res, st := pl.(*NodeAffinity).PreFilter(context.Background(), framework.NewCycleState(), p)
	if !st.IsSuccess() || res == nil || len(res.NodeNames) != 2 {
		t.Fatalf("matchFields on names should narrow to them: %v %v", res, st)
	}
}

func TestScoreAndAddedAffinity(t *testing.T) {
	nodes := []*v1.Node{pt.Node("a", "1", "1Gi", "zone", "a", "disk", "ssd"), pt.Node("b", "1", "1Gi", "zone", "b", "disk", "ssd"), pt.Node("c", "1", "1Gi", "zone", "c")}
	s := pt.Snapshot(nodes)
	p := pt.Pod("p", "", "")
	p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
		{Weight: 2, Preference: req("disk", v1.NodeSelectorOpIn, "ssd")},
		{Weight: 6, Preference: req("zone", v1.NodeSelectorOpIn, "a")},
	}}}
	pl, _ := New(context.Background(), nil, nil)
	got, st := pt.ScoreAll(context.Background(), pl.(framework.ScorePlugin), framework.NewCycleState(), p, s)
	// raw: a 8, b 2, c 0; normalized by the max.
	if !st.IsSuccess() || got["a"] != 100 || got["b"] != 25 || got["c"] != 0 {
		t.Fatalf("scores %v", got)
	}
	args, _ := json.Marshal(Args{AddedAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{req("zone", v1.NodeSelectorOpNotIn, "c")}}}})
	pl, err := New(context.Background(), args, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st := pl.(*NodeAffinity).Filter(context.Background(), framework.NewCycleState(), pt.Pod("q", "", ""), pt.NodeInfo(nodes[2])); st.IsSuccess() {
		t.Fatal("addedAffinity did not apply")
	}
	if _, err := New(context.Background(), json.RawMessage(`{"added": 1}`), nil); err == nil {
		t.Fatal("unknown args key accepted")
	}
}
