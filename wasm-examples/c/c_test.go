// Package cexamples_test runs the C example plugins (built by their build.sh with clang
// and lld) through the real wasm host and scheduler adapter.
package cexamples_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

func pod(name, cpu string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "uid-" + types.UID(name), Annotations: annotations},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

// node has 1000m allocatable cpu and runs pods requesting usedCPU in total.
func node(name, usedCPU string) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pod(name+"-running", usedCPU, nil))
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

func TestCPUHeadroomFilterThroughTheHost(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "headroom", wasmbuild.Script(t, "wasm-examples/c/cpu-headroom-filter"))
	for _, bad := range []string{`{"headroom": 101}`, `{"headroom": "x"}`} {
		if _, err := f(ctx, json.RawMessage(bad), nil); err == nil || !strings.Contains(err.Error(), "args.headroom") {
			t.Errorf("args %s: err = %v, want the init's rejection naming args.headroom", bad, err)
		}
	}
	p, err := f(ctx, json.RawMessage(`{"headroom": 20}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A 200m pod on 1000m nodes: free share after placing it is 800m-used.
	nodes := []*framework.NodeInfo{node("empty", "0"), node("half", "500m"), node("tight", "650m"), node("full", "1")}
	tests := []struct {
		annotation string
		pass       []bool
	}{
		{"", []bool{true, true, false, false}},   // 20%: free 80%, 30%, 15%, -20%
		{"30", []bool{true, true, false, false}}, // 30%: exactly 30% left still passes
		{"31", []bool{true, false, false, false}},
		{"5", []bool{true, true, false, false}}, // a lower annotation never weakens the args
	}
	for _, tt := range tests {
		var ann map[string]string
		if tt.annotation != "" {
			ann = map[string]string{"wasmkube.io/cpu-headroom": tt.annotation}
		}
		st := make([]*framework.Status, len(nodes))
		p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod("p", "200m", ann), nodes, st)
		for i, n := range nodes {
			if got := st[i] == nil; got != tt.pass[i] {
				t.Errorf("annotation %q, node %s: passed=%v (%v), want %v", tt.annotation, n.Node().Name, got, st[i].Message(), tt.pass[i])
			}
			if st[i] != nil && (st[i].Code() != framework.Unschedulable || st[i].Message() != "not enough cpu headroom") {
				t.Errorf("annotation %q, node %s: status %v %q, want Unschedulable: not enough cpu headroom", tt.annotation, n.Node().Name, st[i].Code(), st[i].Message())
			}
		}
	}
	// A malformed annotation is the plugin's Error; failurePolicy Fail rejects the batch with it.
	st := make([]*framework.Status, len(nodes))
	p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod("p", "200m", map[string]string{"wasmkube.io/cpu-headroom": "lots"}), nodes, st)
	for i, n := range nodes {
		if st[i] == nil || !strings.Contains(st[i].Message(), "annotation wasmkube.io/cpu-headroom") {
			t.Errorf("malformed annotation, node %s: %v, want a rejection naming the annotation", n.Node().Name, st[i].Message())
		}
	}
}
