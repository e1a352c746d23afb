//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/noderesources"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestSpreading(t *testing.T) {
	res := sdk.NodeResources{Allocatable: sdk.Resources{MilliCPU: 4000, Memory: 8 << 30}, NonZeroRequested: sdk.NonZero{MilliCPU: 1000, Memory: 2 << 30}}
	tests := []struct {
		cpu, mem int64
		want     int64
	}{
		{0, 0, 75},
		{1000, 2 << 30, 50},
		{8000, 16 << 30, 0}, // overfull counts as full
	}
	for _, tt := range tests {
		if got := Spreading(tt.cpu, tt.mem, &res); got != tt.want {
			t.Errorf("Spreading(%d, %d) = %d, want %d", tt.cpu, tt.mem, got, tt.want)
		}
	}
	if got := Spreading(100, 100, &sdk.NodeResources{}); got != 0 {
		t.Errorf("no allocatable: %d, want 0", got)
	}
}

// The compiled module, run by the real host, scores exactly as the native
// NodeResourcesFit with the LeastAllocated strategy.
func TestModuleMatchesNativeLeastAllocated(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "spread", wasmbuild.Go(t, "wasm-examples/go/spread-score"))
	p, err := f(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	native, err := noderesources.New(ctx, json.RawMessage(`{"scoringStrategy":{"type":"LeastAllocated"}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	nodes := testNodes()
	pod := testPod("500m", "1Gi")
	scores := make([]int64, len(nodes))
	if st := p.(framework.BatchScorePlugin).ScoreBatch(ctx, framework.NewCycleState(), pod, nodes, scores); st != nil {
		t.Fatal(st.Message())
	}
	best := 0 // the emptiest node wins
	for i, n := range nodes {
		want, _ := native.(framework.ScorePlugin).Score(ctx, framework.NewCycleState(), pod, n)
		if scores[i] != want {
			t.Errorf("node %s: wasm %d, native %d", n.Node().Name, scores[i], want)
		}
		if scores[i] > scores[best] {
			best = i
		}
	}
	if nodes[best].Node().Name != "big" {
		t.Errorf("best node %s, want big", nodes[best].Node().Name)
	}
}

func testPod(cpu, mem string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func testNodes() []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range []struct {
		name, cpu, mem string
		pods           []*v1.Pod
	}{
		{"idle", "4", "8Gi", nil},
		{"half", "4", "8Gi", []*v1.Pod{testPod("2", "4Gi")}},
		{"busy", "4", "8Gi", []*v1.Pod{testPod("3", "6Gi")}},
		{"big", "64", "256Gi", []*v1.Pod{testPod("3", "6Gi")}},
		{"nothing", "0", "0", nil},
	} {
		ni := framework.NewNodeInfo(n.pods...)
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(n.cpu), v1.ResourceMemory: resource.MustParse(n.mem), v1.ResourcePods: resource.MustParse("110")}}})
		out = append(out, ni)
	}
	return out
}
