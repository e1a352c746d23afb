package runtime_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func batchFramework(t *testing.T, snap *cache.Snapshot, batching bool) *runtime.Framework {
	t.Helper()
	f, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "default-scheduler"},
		runtime.Options{Lister: snap, Parallelism: 4, KeepTotals: true, Batching: batching})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBatchingPlacesAsAFullPass schedules equal pods one after another, each assumed in
// the cache before the next (as the scheduler does), through a batching profile and,
// on the same snapshot, a profile that does a full pass for every pod: every batched pod
// sees exactly the full pass's ranking (same feasible nodes, same totals), also after a
// pod placed by someone else changed a node the ranking covers.
func TestBatchingPlacesAsAFullPass(t *testing.T) {
	c := cache.New()
	for i := range 12 {
		c.AddNode(node(fmt.Sprintf("n%02d", i), fmt.Sprint(2+i), fmt.Sprintf("%dGi", 4+3*i)))
	}
	snap := cache.NewSnapshot()
	full := batchFramework(t, snap, false)
	batched := batchFramework(t, snap, true)
	ctx := context.Background()
	reused := 0
	for i := range 40 {
		if i == 20 {
			// A pod the batch did not place changes one of its nodes.
			other := pod("other", "1500m", "1Gi")
			other.Spec.NodeName = "n07"
			if err := c.AddPod(other); err != nil {
				t.Fatal(err)
			}
		}
		c.UpdateSnapshot(snap)
		p := pod(fmt.Sprintf("p%02d", i), "900m", "1Gi")
		p.Labels = map[string]string{"app": "web"}
		want, errFull := full.SchedulePod(ctx, framework.NewCycleState(), p)
		got, errBatch := batched.SchedulePod(ctx, framework.NewCycleState(), p)
		if (errFull == nil) != (errBatch == nil) {
			t.Fatalf("pod %d: full pass err %v, batched err %v", i, errFull, errBatch)
		}
		if errFull != nil {
			t.Fatalf("pod %d: %v", i, errFull)
		}
		if !maps.Equal(want.Totals, got.Totals) {
			t.Fatalf("pod %d (%s): batched ranking %v differs from the full pass's %v", i, got.Batch, got.Totals, want.Totals)
		}
		if want.Totals[got.SuggestedHost] != maxTotal(want.Totals) {
			t.Fatalf("pod %d: batched choice %s is not among the best of the full pass %v", i, got.SuggestedHost, want.Totals)
		}
		if i == 0 && got.Batch != runtime.BatchStored {
			t.Fatalf("pod 0: batch %q, want %q", got.Batch, runtime.BatchStored)
		}
		if got.Batch == runtime.BatchReused {
			reused++
		}
		assumed := p.DeepCopy()
		assumed.Spec.NodeName = got.SuggestedHost
		if err := c.AssumePod(assumed); err != nil {
			t.Fatal(err)
		}
	}
	if reused != 39 {
		t.Fatalf("%d of 39 pods after the first were placed from the batch", reused)
	}
}

func maxTotal(m map[string]int64) int64 {
	var best int64 = -1
	for _, v := range m {
		best = max(best, v)
	}
	return best
}

// TestBatchingKeepsApartWhatDiffers: a pod of another signature is not placed from the
// ranking (it is dropped, and the pod's own pass kept), an unsignable pod is never
// batched, and the ranking is dropped when a node joins.
func TestBatchingKeepsApartWhatDiffers(t *testing.T) {
	c := cache.New()
	for i := range 5 {
		c.AddNode(node(fmt.Sprintf("n%d", i), "8", "16Gi"))
	}
	snap := cache.NewSnapshot()
	f := batchFramework(t, snap, true)
	ctx := context.Background()
	n := 0
	schedule := func(p *v1.Pod) runtime.ScheduleResult {
		t.Helper()
		n++
		p.Name, p.UID = fmt.Sprintf("%s-%d", p.Name, n), types.UID(fmt.Sprintf("%s-%d", p.Name, n))
		c.UpdateSnapshot(snap)
		res, err := f.SchedulePod(ctx, framework.NewCycleState(), p)
		if err != nil {
			t.Fatal(err)
		}
		a := p.DeepCopy()
		a.Spec.NodeName = res.SuggestedHost
		if err := c.AssumePod(a); err != nil {
			t.Fatal(err)
		}
		return res
	}
	steps := []struct {
		pod  *v1.Pod
		want string
	}{
		{pod("a", "1", "1Gi"), runtime.BatchStored},
		{pod("a", "1", "1Gi"), runtime.BatchReused},
		{pod("b", "2", "1Gi"), runtime.BatchFlushSignature},
		{pod("b", "2", "1Gi"), runtime.BatchReused},
		{spread(pod("s", "2", "1Gi")), runtime.BatchUnsignable},
		{pod("b", "2", "1Gi"), runtime.BatchReused},
		{withTolerations(pod("b", "2", "1Gi")), runtime.BatchFlushSignature},
	}
	for i, s := range steps {
		if got := schedule(s.pod).Batch; got != s.want {
			t.Fatalf("step %d (%s): batch %q, want %q", i, s.pod.Name, got, s.want)
		}
	}
	c.AddNode(node("late", "8", "16Gi"))
	if got := schedule(withTolerations(pod("b", "2", "1Gi"))).Batch; got != runtime.BatchFlushNodeList {
		t.Fatalf("after a node joined: batch %q, want %q", got, runtime.BatchFlushNodeList)
	}
}

func spread(p *v1.Pod) *v1.Pod {
	p.Labels = map[string]string{"app": "s"}
	p.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname,
		WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels}}}
	return p
}

func withTolerations(p *v1.Pod) *v1.Pod {
	p.Spec.Tolerations = []v1.Toleration{{Key: "dedicated", Operator: v1.TolerationOpExists}}
	return p
}
