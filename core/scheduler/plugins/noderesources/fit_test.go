package noderesources

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func TestFilter(t *testing.T) {
	node := pt.Node("n", "4", "8Gi")
	node.Status.Allocatable[v1.ResourcePods] = resource.MustParse("2")
	node.Status.Allocatable["example.com/gpu"] = resource.MustParse("1")
	used := pt.On(pt.Pod("used", "3", "4Gi"), "n")
	gpu := func(p *v1.Pod, n string) *v1.Pod {
		p.Spec.Containers[0].Resources.Requests["example.com/gpu"] = resource.MustParse(n)
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		on   []*v1.Pod
		want []string
	}{
		{"fits", pt.Pod("p", "1", "4Gi"), []*v1.Pod{used}, nil},
		{"cpu", pt.Pod("p", "1100m", "1Gi"), []*v1.Pod{used}, []string{"Insufficient cpu"}},
		{"memory", pt.Pod("p", "100m", "5Gi"), []*v1.Pod{used}, []string{"Insufficient memory"}},
		{"both", pt.Pod("p", "2", "5Gi"), []*v1.Pod{used}, []string{"Insufficient cpu", "Insufficient memory"}},
		{"too many pods", pt.Pod("p", "", ""), []*v1.Pod{used, pt.On(pt.Pod("x", "", ""), "n")}, []string{"Too many pods"}},
		{"extended resource", gpu(pt.Pod("p", "", ""), "2"), nil, []string{"Insufficient example.com/gpu"}},
		{"extended resource fits", gpu(pt.Pod("p", "", ""), "1"), nil, nil},
		{"best effort always fits resources", pt.Pod("p", "", ""), []*v1.Pod{pt.On(pt.Pod("big", "4", "8Gi"), "n")}, nil},
	} {
		pl, _ := New(context.Background(), nil, nil)
		fit := pl.(*Fit)
		state := framework.NewCycleState()
		fit.PreFilter(context.Background(), state, tc.pod)
		st := fit.Filter(context.Background(), state, tc.pod, pt.NodeInfo(node, tc.on...))
		if !reflect.DeepEqual(st.Reasons(), tc.want) || (tc.want != nil && st.Code() != framework.Unschedulable) {
			t.Errorf("%s: %v %v, want %v", tc.name, st.Code(), st.Reasons(), tc.want)
		}
	}
}

func TestRequestsWithInitContainersAndOverhead(t *testing.T) {
	p := pt.Pod("p", "1", "1Gi")
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}}
	p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}
	req, nz := framework.PodRequests(p)
	// max(init 3, app 1) + overhead 0.25
	if req.MilliCPU != 3250 || req.Memory != 1<<30 {
		t.Fatalf("requests %+v", req)
	}
	if nz.MilliCPU != 3250 {
		t.Fatalf("non-zero requests %+v", nz)
	}
	_, nz = framework.PodRequests(pt.Pod("empty", "", ""))
	if nz.MilliCPU != framework.DefaultMilliCPURequest || nz.Memory != framework.DefaultMemoryRequest {
		t.Fatalf("non-zero defaults %+v", nz)
	}
}

func TestScoreStrategies(t *testing.T) {
	// Upstream's example: node 4000m/10000 bytes, pod 3000m/5000 → least (25+50)/2 = 37,
	// most (75+50)/2 = 62.
	node := pt.Node("n", "4", "10000")
	p := pt.Pod("p", "3", "5000")
	for _, tc := range []struct {
		args string
		want int64
	}{{"", 37}, {`{"scoringStrategy":{"type":"LeastAllocated"}}`, 37}, {`{"scoringStrategy":{"type":"MostAllocated"}}`, 62},
		{`{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":3},{"name":"memory","weight":1}]}}`, (25*3 + 50) / 4}} {
		pl, err := New(context.Background(), json.RawMessage(tc.args), nil)
		if err != nil {
			t.Fatal(err)
		}
		state := framework.NewCycleState()
		pl.(*Fit).PreFilter(context.Background(), state, p)
		got, _ := pl.(*Fit).Score(context.Background(), state, p, pt.NodeInfo(node))
		if got != tc.want {
			t.Errorf("args %s: score %d, want %d", tc.args, got, tc.want)
		}
	}
	if _, err := New(context.Background(), json.RawMessage(`{"scoringStrategy":{"type":"Nope"}}`), nil); err == nil {
		t.Fatal("unknown strategy accepted")
	}
}
