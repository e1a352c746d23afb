package main

import (
	"strings"
	"testing"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func TestPrintExplanation(t *testing.T) {
	var b strings.Builder
	printExplanation(&b, "default/web", "n2", &runtime.Explanation{
		Profile: "default-scheduler", Result: "Scheduled", Node: "n2", Nodes: 3, Evaluated: 3, Feasible: 2,
		FilterPlugins: []string{"NodeName", "NodeResourcesFit"}, SkippedScore: []string{"NodeAffinity"},
		ScorePlugins: []config.Plugin{{Name: "NodeResourcesFit", Weight: 1}, {Name: "NodeAffinity", Weight: 2}},
		Top:          []runtime.NodeExplanation{{Node: "n2", Total: 90, Scores: []int64{90, 0}}, {Node: "n1", Total: 40, Scores: []int64{40, 0}}},
		Rejected:     []runtime.Rejection{{Node: "n3", Plugin: "NodeResourcesFit", Code: "Unschedulable", Reason: "Insufficient cpu"}},
		RejectCounts: []runtime.RejectCount{{Plugin: "NodeResourcesFit", Reason: "Insufficient cpu", Count: 1}},
	})
	out := b.String()
	for _, want := range []string{
		"Pod default/web: scheduled on n2 by profile default-scheduler",
		"Nodes: 3 in the cluster, 3 evaluated by Filter, 2 feasible",
		"NodeResourcesFit(x1)", "NodeAffinity(x2)[skip]",
		"n2 *", "n3", "Insufficient cpu",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "n2 *") && !strings.HasPrefix(lines[i+1], "n1") {
			t.Errorf("best nodes out of order:\n%s", out)
		}
	}
}

func TestPrintAttempt(t *testing.T) {
	pass := explorerv1.FilterVerdict{Verdict: explorerv1.VerdictPass}
	var b strings.Builder
	pd := &explorerv1.PodDecisions{Records: []explorerv1.Record{
		{Type: explorerv1.TypeAdmissionRequest, AdmissionRequest: &explorerv1.AdmissionRequest{Operation: "CREATE", Allowed: false, DeniedBy: "require-team", Message: "must carry label team"}},
		{Type: explorerv1.TypeSchedulingAttempt, SchedulingAttempt: &explorerv1.SchedulingAttempt{
			Attempt: 2, Profile: "default-scheduler", Result: explorerv1.ResultScheduled, Node: "n2", Nodes: 3, Evaluated: 3, Feasible: 2,
			FilterPlugins: []explorerv1.Plugin{{Name: "NodeResourcesFit"}, {Name: "zone", Wasm: &explorerv1.Module{Path: "zone.wasm"}}},
			ScorePlugins:  []explorerv1.Plugin{{Name: "pack", Weight: 3, Wasm: &explorerv1.Module{Path: "pack.wasm"}}},
			Matrix: []explorerv1.MatrixRow{
				{Node: "n2", Chosen: true, Filter: []explorerv1.FilterVerdict{pass, pass}, Scores: []explorerv1.Score{{Raw: 7, Normalized: 70, Weighted: 210}}, Final: 210},
				{Node: "n1", Filter: []explorerv1.FilterVerdict{pass, pass}, Scores: []explorerv1.Score{{Raw: 3, Normalized: 30, Weighted: 90}}, Final: 90},
				{Node: "n3", Filter: []explorerv1.FilterVerdict{pass, {Verdict: explorerv1.VerdictUnschedulable, Reason: "zone b is closed"}}},
			}}},
	}}
	printAttempt(&b, "default/web", "n2", pd)
	out := b.String()
	for _, want := range []string{
		"Pod default/web: scheduled on n2 by profile default-scheduler (attempt 2; 1 recorded)",
		"pack[wasm](x3)", "n2 *", "210 [7]", "n3", "zone", "zone b is closed", `Refused CREATE`, `"require-team"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The cycle chose n2 but the pod is not bound: held at Permit (a gang waiting for its group).
	b.Reset()
	printAttempt(&b, "default/web", "", pd)
	if want := "Pod default/web: assigned to n2, not bound yet (waiting at Permit"; !strings.Contains(b.String(), want) {
		t.Errorf("a pod held at Permit:\n%s\nlacks %q", b.String(), want)
	}
}
