package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// TestExplorerRecordOfAWasmScore schedules a pod on hollow nodes with a wasm Score plugin
// (the Go pack-score example) and reads its record from the API server, where the
// scheduler pushed it: every node is a row of the matrix with every Filter verdict and
// the plugin's raw, normalized and weighted scores, the wasm plugin's column names its
// module, the chosen node is the bound one and comes first, and the final scores add up.
func TestExplorerRecordOfAWasmScore(t *testing.T) {
	c := newCluster(t, 3)
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	module := wasmbuild.Go(t, "wasm-examples/go/pack-score")
	cfg := fmt.Sprintf(`
scheduler:
  wasmPlugins:
  - name: pack
    path: %s
  profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled: [{name: pack, weight: 3}]
`, module)
	// A pod already on hollow-1 makes it the fullest node: pack-score's favourite.
	filler := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler", Namespace: "default"}, Spec: v1.PodSpec{NodeName: "hollow-1",
		Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	if _, err := c.client.CoreV1().Pods("default").Create(c.ctx, filler, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.startScheduler(scheduler.Options{Config: []byte(cfg), WasmLoader: schedwasm.NewLoader(h).Load})
	c.createPod("web", requests("100m", "64Mi"))
	pod := c.waitPod("web", "bound", bound)

	var a *explorerv1.SchedulingAttempt
	err = wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		raw, err := c.client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces/default/pods/web").Do(ctx).Raw()
		if err != nil {
			return false, err
		}
		var pd explorerv1.PodDecisions
		if err := json.Unmarshal(raw, &pd); err != nil {
			return false, err
		}
		for _, r := range pd.Records {
			if r.SchedulingAttempt != nil {
				a = r.SchedulingAttempt
			}
		}
		return a != nil, nil
	})
	if err != nil {
		t.Fatalf("the scheduler's record of web did not reach the API server: %v", err)
	}
	if a.Result != explorerv1.ResultScheduled || a.Node != pod.Spec.NodeName || a.Nodes != 3 || a.Evaluated != 3 || a.Feasible != 3 || a.Attempt < 1 {
		t.Fatalf("attempt: result %s node %q (bound to %q), nodes %d/%d/%d, attempt %d", a.Result, a.Node, pod.Spec.NodeName, a.Nodes, a.Evaluated, a.Feasible, a.Attempt)
	}
	packCol := -1
	for i, p := range a.ScorePlugins {
		if p.Name == "pack" {
			packCol = i
			if p.Weight != 3 || p.Wasm == nil || !strings.HasSuffix(p.Wasm.Path, ".wasm") || !strings.HasPrefix(p.Wasm.Digest, "sha256:") {
				t.Errorf("the wasm Score column: %+v, want weight 3 and its module", p)
			}
		} else if p.Wasm != nil {
			t.Errorf("native Score plugin %s is shown as wasm (%+v)", p.Name, p.Wasm)
		}
	}
	if packCol < 0 || len(a.FilterPlugins) == 0 {
		t.Fatalf("columns: filter %v, score %v; want pack among the Score plugins", a.FilterPlugins, a.ScorePlugins)
	}
	if len(a.Matrix) != 3 || !a.Matrix[0].Chosen || a.Matrix[0].Node != pod.Spec.NodeName {
		t.Fatalf("matrix %+v: want the 3 nodes, the bound node first and chosen", a.Matrix)
	}
	raw := map[string]int64{}
	for _, row := range a.Matrix {
		if len(row.Filter) != len(a.FilterPlugins) || len(row.Scores) != len(a.ScorePlugins) {
			t.Fatalf("row %s: %d filter verdicts, %d scores; want one per column", row.Node, len(row.Filter), len(row.Scores))
		}
		for i, f := range row.Filter {
			if f.Verdict != explorerv1.VerdictPass && f.Verdict != explorerv1.VerdictSkip {
				t.Errorf("row %s: %s says %s on a feasible node", row.Node, a.FilterPlugins[i].Name, f.Verdict)
			}
		}
		var sum int64
		for i, s := range row.Scores {
			if s.Weighted != s.Normalized*a.ScorePlugins[i].Weight {
				t.Errorf("row %s, %s: weighted %d != normalized %d x weight %d", row.Node, a.ScorePlugins[i].Name, s.Weighted, s.Normalized, a.ScorePlugins[i].Weight)
			}
			sum += s.Weighted
		}
		if sum != row.Final {
			t.Errorf("row %s: final %d, the weighted scores add up to %d", row.Node, row.Final, sum)
		}
		raw[row.Node] = row.Scores[packCol].Raw
	}
	if !(raw["hollow-1"] > raw["hollow-0"] && raw["hollow-1"] > raw["hollow-2"]) {
		t.Errorf("pack's raw scores %v: want hollow-1 (with the filler pod) highest", raw)
	}
}
