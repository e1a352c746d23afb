package main

import (
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func TestPrintExplanation(t *testing.T) {
	var b strings.Builder
	printExplanation(&b, "default/web", &runtime.Explanation{
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
