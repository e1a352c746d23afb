package schedwasm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/noderesources"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// TestRunFormsAnswerAsNative: node_resources_range and node_scores give a plugin the same
// data as node_resources and node_score. The same Filter+Score by hand in WAT through the
// per-node functions and through the run forms, and the Go examples (whose SDK reads 256
// nodes per crossing), agree with the native NodeResourcesFit on every node, whatever the
// batch size: batches of 1, of 7, and of 600 (more than one window of 256).
func TestRunFormsAnswerAsNative(t *testing.T) {
	ctx := context.Background()
	l := newLoader(t)
	// 600 nodes of 2 cpu and 4Gi with 0 to 4 pods of 500m/1Gi: a pod of 1 cpu and 2Gi fits
	// on those with at most 2 pods.
	nodes := make([]*framework.NodeInfo, 600)
	for i := range nodes {
		var pods []*v1.Pod
		for j := range i % 5 {
			pods = append(pods, pod(fmt.Sprintf("run-%d-%d", i, j), "500m", "1Gi"))
		}
		nodes[i] = node(fmt.Sprintf("node-%d", i), "", "2", "4Gi", pods...)
	}
	p := pod("new", "1", "2Gi")

	native, err := noderesources.New(ctx, json.RawMessage(`{"scoringStrategy":{"type":"MostAllocated"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	state := framework.NewCycleState()
	native.(framework.PreFilterPlugin).PreFilter(ctx, state, p)
	wantFit := make([]bool, len(nodes))
	wantScore := make([]int64, len(nodes))
	for i, n := range nodes {
		wantFit[i] = native.(framework.FilterPlugin).Filter(ctx, state, p, n).IsSuccess()
		wantScore[i], _ = native.(framework.ScorePlugin).Score(ctx, state, p, n)
	}

	for _, tc := range []struct{ name, filter, score string }{
		{"wat per node", "wat:plugins/schedwasm/testdata/fitpack-node.wat", "wat:plugins/schedwasm/testdata/fitpack-node.wat"},
		{"wat run forms", "wat:plugins/schedwasm/testdata/fitpack-range.wat", "wat:plugins/schedwasm/testdata/fitpack-range.wat"},
		{"go sdk", "go:wasm-examples/go/node-resources-fit", "go:wasm-examples/go/pack-score"},
	} {
		f := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "fit"}}, tc.filter, "").(framework.BatchFilterPlugin)
		s := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "pack"}}, tc.score, "").(framework.BatchScorePlugin)
		for _, chunk := range []int{1, 7, 600} {
			st := make([]*framework.Status, len(nodes))
			sc := make([]int64, len(nodes))
			state := framework.NewCycleState()
			for lo := 0; lo < len(nodes); lo += chunk {
				hi := min(lo+chunk, len(nodes))
				f.FilterBatch(ctx, state, p, nodes[lo:hi], st[lo:hi])
				if s := s.ScoreBatch(ctx, state, p, nodes[lo:hi], sc[lo:hi]); s != nil {
					t.Fatalf("%s, chunk %d: score: %v", tc.name, chunk, s.Message())
				}
			}
			for i := range nodes {
				if st[i].IsSuccess() != wantFit[i] {
					t.Errorf("%s, chunk %d, node %d: filter %v, native fits=%v", tc.name, chunk, i, st[i].Message(), wantFit[i])
				}
				if sc[i] != wantScore[i] {
					t.Errorf("%s, chunk %d, node %d: score %d, native %d", tc.name, chunk, i, sc[i], wantScore[i])
				}
			}
		}
	}
}

// TestNodeScoresOutsideTheBatch: node_scores for nodes the batch does not have, or from a
// Filter, is a garbage result naming the range.
func TestNodeScoresOutsideTheBatch(t *testing.T) {
	ctx := context.Background()
	pl := mustPlugin(t, newLoader(t), config.WasmPlugin{Spec: modulespec.Spec{Name: "bad"}}, "wat:plugins/schedwasm/testdata/badscores.wat", "")
	nodes := []*framework.NodeInfo{node("a", "", "1", "1Gi"), node("b", "", "1", "1Gi")}
	st := pl.(framework.BatchScorePlugin).ScoreBatch(ctx, framework.NewCycleState(), pod("p", "1", "1Gi"), nodes, make([]int64, 2))
	if st == nil || !strings.Contains(st.Message(), "node_scores: nodes 1 .. 2 are outside the batch of 2") {
		t.Fatalf("score: %v, want a garbage result naming nodes 1 .. 2", st)
	}
	fs := make([]*framework.Status, 2)
	pl.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod("p", "1", "1Gi"), nodes, fs)
	if fs[0] == nil || !strings.Contains(fs[0].Message(), "node_scores called from filter") {
		t.Fatalf("filter: %v, want a garbage result: node_scores called from filter", fs[0])
	}
}
