// Package schedwasmtest loads a wasm plugin module as the scheduler does, for the tests
// of the example plugins.
package schedwasmtest

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// Load compiles the module at path on a fresh host (its compilation cache in a test
// directory) and returns the factory that builds the plugin named name from its args.
func Load(t testing.TB, name, path string) framework.PluginFactory {
	t.Helper()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := schedwasm.NewLoader(h).Load(context.Background(), config.WasmPlugin{Spec: modulespec.Spec{Name: name, Path: path}}, "")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// RequestPod is a pod named p with one container requesting cpu and mem.
func RequestPod(cpu, mem string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

// ResourceNodes are five nodes for resource scores: "idle", "half" and "busy" with 4 cpu
// and 8Gi, nothing, 2/4Gi and 3/6Gi requested; "big" with 64 cpu and 256Gi, 3/6Gi
// requested; "nothing" with no cpu or memory at all.
func ResourceNodes() []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range []struct {
		name, cpu, mem string
		pods           []*v1.Pod
	}{
		{"idle", "4", "8Gi", nil},
		{"half", "4", "8Gi", []*v1.Pod{RequestPod("2", "4Gi")}},
		{"busy", "4", "8Gi", []*v1.Pod{RequestPod("3", "6Gi")}},
		{"big", "64", "256Gi", []*v1.Pod{RequestPod("3", "6Gi")}},
		{"nothing", "0", "0", nil},
	} {
		ni := framework.NewNodeInfo(n.pods...)
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(n.cpu), v1.ResourceMemory: resource.MustParse(n.mem), v1.ResourcePods: resource.MustParse("110")}}})
		out = append(out, ni)
	}
	return out
}

// ScoresMatch scores pod on nodes with the batch score plugin wasm and, node by node,
// with the score plugin native, and reports every node where the two differ. It returns
// the name of the node wasm scored highest (the first of equals).
func ScoresMatch(t testing.TB, wasm, native framework.Plugin, pod *v1.Pod, nodes []*framework.NodeInfo) string {
	t.Helper()
	ctx := context.Background()
	scores := make([]int64, len(nodes))
	if st := wasm.(framework.BatchScorePlugin).ScoreBatch(ctx, framework.NewCycleState(), pod, nodes, scores); st != nil {
		t.Fatal(st.Message())
	}
	best := 0
	for i, n := range nodes {
		want, _ := native.(framework.ScorePlugin).Score(ctx, framework.NewCycleState(), pod, n)
		if scores[i] != want {
			t.Errorf("node %s: wasm %d, native %d", n.Node().Name, scores[i], want)
		}
		if scores[i] > scores[best] {
			best = i
		}
	}
	return nodes[best].Node().Name
}
