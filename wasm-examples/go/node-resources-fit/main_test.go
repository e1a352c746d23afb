//go:build !wasip1

package main

import (
	"context"
	"encoding/json"
	"reflect"
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

func TestInsufficient(t *testing.T) {
	node := sdk.NodeResources{Allocatable: sdk.Resources{MilliCPU: 1000, Memory: 1000, EphemeralStorage: 1000, Pods: 2}, Requested: sdk.Resources{MilliCPU: 500, Memory: 500, Pods: 1}}
	tests := []struct {
		req  sdk.Resources
		want []string
	}{
		{sdk.Resources{MilliCPU: 500, Memory: 500}, nil},
		{sdk.Resources{MilliCPU: 501}, []string{"Insufficient cpu"}},
		{sdk.Resources{Memory: 501, EphemeralStorage: 1001}, []string{"Insufficient memory", "Insufficient ephemeral-storage"}},
	}
	for _, tt := range tests {
		if got := Insufficient(tt.req, &node); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Insufficient(%+v) = %v, want %v", tt.req, got, tt.want)
		}
		req := &sdk.PodRequests{MilliCPU: tt.req.MilliCPU, Memory: tt.req.Memory, EphemeralStorage: tt.req.EphemeralStorage}
		if Fits(req, &node) != (tt.want == nil) {
			t.Errorf("Fits(%+v) = %v, want %v", tt.req, !(tt.want == nil), tt.want == nil)
		}
	}
	node.Requested.Pods = 2
	if got := Insufficient(sdk.Resources{}, &node); !reflect.DeepEqual(got, []string{"Too many pods"}) {
		t.Errorf("full node: %v", got)
	}
}

// The wasm port gives the same verdicts, with the same reasons, as the native plugin.
func TestModuleMatchesNativeFilter(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "fit", wasmbuild.Go(t, "wasm-examples/go/node-resources-fit"))
	args := json.RawMessage(`{"ignoredResources": ["example.com/ignored"]}`)
	wasm, err := f(ctx, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	native, err := noderesources.New(ctx, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	mk := func(cpu, mem, gpu string, pods ...*v1.Pod) *framework.NodeInfo {
		ni := framework.NewNodeInfo(pods...)
		alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem),
			v1.ResourcePods: resource.MustParse("2"), v1.ResourceEphemeralStorage: resource.MustParse("10Gi")}
		if gpu != "" {
			alloc["example.com/gpu"] = resource.MustParse(gpu)
		}
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: cpu + "-" + mem + "-" + gpu}, Status: v1.NodeStatus{Allocatable: alloc}})
		return ni
	}
	req := func(cpu, mem string, extra v1.ResourceList) *v1.Pod {
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		for k, v := range extra {
			r[k] = v
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{Requests: r}}}}}
	}
	nodes := []*framework.NodeInfo{
		mk("4", "8Gi", ""),
		mk("1", "8Gi", "1"),
		mk("4", "1Gi", "4"),
		mk("4", "8Gi", "2", req("1", "1Gi", nil), req("1", "1Gi", nil)), // no pod slot left
		mk("2", "2Gi", "", req("1500m", "1Gi", nil)),
	}
	pods := []*v1.Pod{
		req("2", "2Gi", nil),
		req("500m", "512Mi", v1.ResourceList{"example.com/gpu": resource.MustParse("2")}),
		req("500m", "512Mi", v1.ResourceList{"example.com/ignored": resource.MustParse("9")}),
		req("8", "16Gi", v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("20Gi")}),
	}
	for _, pod := range pods {
		st := make([]*framework.Status, len(nodes))
		wasm.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod, nodes, st)
		for i, n := range nodes {
			want := native.(framework.FilterPlugin).Filter(ctx, framework.NewCycleState(), pod, n)
			if st[i].Code() != want.Code() || !reflect.DeepEqual(st[i].Reasons(), want.Reasons()) {
				t.Errorf("pod %v on node %s: wasm %v %q, native %v %q", pod.Spec.Containers[0].Resources.Requests, n.Node().Name,
					st[i].Code(), st[i].Reasons(), want.Code(), want.Reasons())
			}
		}
	}
}
