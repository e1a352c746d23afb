package defaultpreemption_test

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/defaultpreemption"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func prio(p *v1.Pod, v int32) *v1.Pod { p.Spec.Priority = &v; return p }

func TestSelectVictimsAndPick(t *testing.T) {
	nodes := []*v1.Node{pt.Node("n1", "4", "8Gi"), pt.Node("n2", "4", "8Gi"), pt.Node("n3", "4", "8Gi")}
	pods := []*v1.Pod{
		// n1: two low pods, one of which suffices.
		prio(pt.On(pt.Pod("n1-a", "2", "1Gi"), "n1"), 1), prio(pt.On(pt.Pod("n1-b", "2", "1Gi"), "n1"), 2),
		// n2: one pod of higher priority than n1's.
		prio(pt.On(pt.Pod("n2-a", "4", "1Gi"), "n2"), 5),
		// n3: a pod of the preemptor's priority: not a victim.
		prio(pt.On(pt.Pod("n3-a", "4", "1Gi"), "n3"), 10),
	}
	s := pt.Snapshot(nodes, pods...)
	fwk, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "p"}, runtime.Options{Lister: s})
	if err != nil {
		t.Fatal(err)
	}
	pl := fwk.Plugin(defaultpreemption.Name).(*defaultpreemption.DefaultPreemption)
	p := prio(pt.Pod("p", "2", "1Gi"), 10)
	state := framework.NewCycleState()
	_, ferr := fwk.SchedulePod(context.Background(), state, p)
	fe, ok := ferr.(*runtime.FitError)
	if !ok {
		t.Fatalf("want a FitError, got %v", ferr)
	}
	all, _ := s.List()
	cands, hist := pl.FindCandidates(context.Background(), state, p, all, fe.Diagnosis.NodeToStatus)
	if strings.Join(hist, ", ") != "1 No preemption victims found for incoming pod" {
		t.Fatalf("reasons %q, want n3's", hist)
	}
	byNode := map[string][]string{}
	for _, c := range cands {
		for _, v := range c.Victims {
			byNode[c.Node] = append(byNode[c.Node], v.Name)
		}
	}
	// The lowest-priority pod that frees enough room: n1-a (priority 1) is evicted and
	// n1-b reprieved; n2 needs n2-a; n3 has no victims.
	if len(cands) != 2 || strings.Join(byNode["n1"], ",") != "n1-a" || strings.Join(byNode["n2"], ",") != "n2-a" {
		t.Fatalf("candidates %v", byNode)
	}
	if best := defaultpreemption.PickOne(cands); best.Node != "n1" {
		t.Fatalf("picked %s, want n1 (lowest victim priority)", best.Node)
	}
}

func TestNoCandidateBecauseStillTooBig(t *testing.T) {
	nodes := []*v1.Node{pt.Node("n1", "4", "8Gi")}
	s := pt.Snapshot(nodes, prio(pt.On(pt.Pod("low", "1", "1Gi"), "n1"), 1))
	fwk, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "p"}, runtime.Options{Lister: s})
	if err != nil {
		t.Fatal(err)
	}
	p := prio(pt.Pod("p", "5", "1Gi"), 10)
	state := framework.NewCycleState()
	_, ferr := fwk.SchedulePod(context.Background(), state, p)
	_, st := fwk.RunPostFilterPlugins(context.Background(), state, p, ferr.(*runtime.FitError).Diagnosis.NodeToStatus)
	if want := "preemption: 0/1 nodes are available: 1 Insufficient cpu."; st.Message() != want {
		t.Fatalf("PostFilter: %q, want %q", st.Message(), want)
	}
}

func TestPickOneTieBreaks(t *testing.T) {
	c := func(node string, prios ...int32) defaultpreemption.Candidate {
		var vs []*v1.Pod
		for i, pr := range prios {
			vs = append(vs, prio(pt.Pod(node+string(rune('a'+i)), "", ""), pr))
		}
		return defaultpreemption.Candidate{Node: node, Victims: vs}
	}
	for _, tc := range []struct {
		cands []defaultpreemption.Candidate
		want  string
	}{
		{[]defaultpreemption.Candidate{c("hi", 5), c("lo", 3)}, "lo"},
		{[]defaultpreemption.Candidate{c("sum-big", 3, 3), c("sum-small", 3, 1)}, "sum-small"},
		{[]defaultpreemption.Candidate{c("first", 2), c("second", 2)}, "first"},
	} {
		if got := defaultpreemption.PickOne(tc.cands).Node; got != tc.want {
			t.Errorf("picked %s, want %s", got, tc.want)
		}
	}
}
