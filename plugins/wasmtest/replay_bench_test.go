package wasmtest_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// BenchmarkReplay replays b.N recorded cycles on 5000 nodes against the default profile
// with pack-score as its only Score plugin, compared with the recorded decisions (the
// issue's target: 10,000 cycles at 5000 nodes in under 60 s).
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	var recs []wasmtest.Record
	for i := range 5000 {
		recs = append(recs, wasmtest.Record{Node: &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hollow-%04d", i),
			Labels: map[string]string{"kubernetes.io/hostname": fmt.Sprintf("hollow-%04d", i)}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("16Gi"),
				v1.ResourcePods: resource.MustParse("110")}, Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}}})
	}
	for i := range b.N {
		recs = append(recs, wasmtest.Record{Cycle: &wasmtest.Decision{Node: fmt.Sprintf("hollow-%04d", i%5000), Pod: &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "default", UID: "u"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}}}}}}}})
	}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}})
	if err != nil {
		b.Fatal(err)
	}
	snap := cache.NewSnapshot()
	s, err := wasmtest.NewScheduler(ctx, h, profileConfig("pack", wasmbuild.Go(b, "wasm-examples/go/pack-score")), "", "", snap)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	rep, err := wasmtest.Replay(ctx, recs, s, nil, snap)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(rep.Cycles)/b.Elapsed().Seconds(), "cycles/s")
	b.ReportMetric(b.Elapsed().Seconds()*10000/float64(rep.Cycles), "s/10k-cycles")
}
