package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

type nopMetrics struct{}

func (nopMetrics) ObservePlugin(string, string, framework.Code, time.Duration) {}
func (nopMetrics) ObservePoint(string, string, framework.Code, time.Duration)  {}

// TestAttemptRecord: a recording framework's attempt lists every node (the fitting ones
// with their scores, the one too small with NodeResourcesFit's reason and the plugins
// after it NotRun), its columns in the profile's order, and, for the cycles the metrics
// sample (one in ten), each plugin's time per extension point.
func TestAttemptRecord(t *testing.T) {
	c := cache.New()
	c.AddNode(node("small", "100m", "1Gi"))
	for i := range 3 {
		c.AddNode(node(fmt.Sprintf("big-%d", i), "4", "16Gi"))
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	f, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "default-scheduler"},
		runtime.Options{Lister: snap, Parallelism: 4, ExplainTopNodes: 10, RecordNodes: 10, Metrics: nopMetrics{}})
	if err != nil {
		t.Fatal(err)
	}
	var a explorerv1.SchedulingAttempt
	for i := range 10 { // the 10th cycle is sampled
		res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), pod(fmt.Sprintf("p-%d", i), "1", "1Gi"))
		if err != nil {
			t.Fatal(err)
		}
		capt := res.Explanation.Capture()
		capt.SetOutcome(explorerv1.ResultScheduled, res.SuggestedHost, "")
		a = capt.Attempt(i+1, time.Millisecond, nil)
		if i < 9 && len(a.Timings) != 0 {
			t.Fatalf("cycle %d (not sampled) has timings %v", i+1, a.Timings)
		}
	}
	if len(a.Matrix) != 4 || !a.Matrix[0].Chosen || a.Matrix[0].Node != a.Node {
		t.Fatalf("matrix %+v: want 4 rows, the chosen node first", a.Matrix)
	}
	fit := -1
	for i, p := range a.FilterPlugins {
		if p.Name == "NodeResourcesFit" {
			fit = i
		}
	}
	last := a.Matrix[3]
	if last.Node != "small" || len(last.Scores) != 0 || last.Filter[fit].Verdict != explorerv1.VerdictUnschedulable || last.Filter[fit].Reason == "" {
		t.Fatalf("the small node's row: %+v", last)
	}
	for i := fit + 1; i < len(last.Filter); i++ {
		if last.Filter[i].Verdict != explorerv1.VerdictNotRun {
			t.Errorf("%s after the rejecting plugin: %s, want NotRun", a.FilterPlugins[i].Name, last.Filter[i].Verdict)
		}
	}
	points := map[string]bool{}
	for _, tm := range a.Timings {
		points[tm.Point] = true
	}
	if !points["Filter"] || !points["Score"] {
		t.Fatalf("sampled cycle's timings %v: want Filter and Score plugins", a.Timings)
	}
}

// TestAttemptSampledOut: a cycle that RecordWhole samples out under load copies no matrix;
// its summary keeps the pod, result, node and counts.
func TestAttemptSampledOut(t *testing.T) {
	c := cache.New()
	for i := range 3 {
		c.AddNode(node(fmt.Sprintf("big-%d", i), "4", "16Gi"))
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	whole := false
	f, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "default-scheduler"},
		runtime.Options{Lister: snap, Parallelism: 4, ExplainTopNodes: 10, RecordNodes: 10, RecordWhole: func() bool { return whole }})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []bool{false, true} {
		whole = w
		res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), pod(fmt.Sprintf("p-%v", w), "1", "1Gi"))
		if err != nil {
			t.Fatal(err)
		}
		capt := res.Explanation.Capture()
		capt.SetOutcome(explorerv1.ResultScheduled, res.SuggestedHost, "")
		if capt.SummaryOnly() == w {
			t.Fatalf("RecordWhole %v: SummaryOnly %v", w, capt.SummaryOnly())
		}
		a := capt.Attempt(1, time.Millisecond, nil)
		if s := capt.Summary(1, time.Millisecond, nil); s.Node != res.SuggestedHost || s.Nodes != 3 || s.Feasible != 3 || s.Result != explorerv1.ResultScheduled || len(s.Matrix) != 0 {
			t.Fatalf("summary %+v", s)
		}
		if w && len(a.Matrix) != 3 {
			t.Fatalf("a whole attempt has %d rows, want 3", len(a.Matrix))
		}
	}
}
