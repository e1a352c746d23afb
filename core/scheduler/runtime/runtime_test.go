package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func node(name string, cpu, mem string, lbl ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}}}
	for i := 0; i+1 < len(lbl); i += 2 {
		n.Labels[lbl[i]] = lbl[i+1]
	}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110")}
	return n
}

func pod(name, cpu, mem string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func newFramework(t testing.TB, reg framework.Registry, prof *config.Profile, snap *cache.Snapshot, top int) *runtime.Framework {
	t.Helper()
	if reg == nil {
		reg = plugins.NewInTreeRegistry()
	}
	if prof == nil {
		prof = &config.Profile{SchedulerName: "default-scheduler"}
	}
	f, err := runtime.New(context.Background(), reg, prof, runtime.Options{Lister: snap, Parallelism: 16, ExplainTopNodes: top})
	if err != nil {
		t.Fatalf("runtime.New: %v", err)
	}
	return f
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	for _, tc := range []struct {
		pct   int32
		nodes int
		want  int
	}{
		{0, 10, 10}, {0, 99, 99}, {0, 100, 50 * 100 / 100}, {0, 1000, 1000 * 42 / 100},
		{0, 5000, 500}, {0, 6000, 6000 * 5 / 100}, {0, 100000, 5000}, {30, 1000, 300}, {100, 5000, 5000}, {1, 1000, 100},
	} {
		got := runtime.NumFeasibleNodesToFind(tc.pct, tc.nodes)
		want := tc.want
		if want < 100 && tc.nodes >= 100 {
			want = 100
		}
		if got != want {
			t.Errorf("NumFeasibleNodesToFind(%d, %d) = %d, want %d", tc.pct, tc.nodes, got, want)
		}
	}
}

func TestSchedulePodPicksLeastAllocatedAndExplains(t *testing.T) {
	c := cache.New()
	c.AddNode(node("busy", "4", "8Gi"))
	c.AddNode(node("idle", "4", "8Gi"))
	c.AddNode(node("tiny", "1", "1Gi"))
	busy := pod("existing", "3", "6Gi")
	busy.Spec.NodeName = "busy"
	if err := c.AddPod(busy); err != nil {
		t.Fatal(err)
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	f := newFramework(t, nil, nil, snap, 10)
	res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), pod("p", "500m", "512Mi"))
	if err != nil {
		t.Fatal(err)
	}
	if res.SuggestedHost != "idle" {
		t.Fatalf("host %q, want idle (least allocated)", res.SuggestedHost)
	}
	e := res.Explanation
	if e == nil || e.Feasible != 3 || len(e.Top) != 3 || e.Top[0].Node != "idle" || e.Top[0].Total <= e.Top[1].Total {
		t.Fatalf("explanation %+v", e)
	}
	if len(e.ScorePlugins) != len(e.Top[0].Scores) {
		t.Fatalf("scores %v do not line up with plugins %v", e.Top[0].Scores, e.ScorePlugins)
	}
	var sum int64
	for _, s := range e.Top[0].Scores {
		sum += s
	}
	if sum != e.Top[0].Total {
		t.Fatalf("total %d != sum of plugin scores %d", e.Top[0].Total, sum)
	}

	// Too big for every node: a FitError with upstream's message.
	_, err = f.SchedulePod(context.Background(), framework.NewCycleState(), pod("big", "5", "1Gi"))
	fe, ok := err.(*runtime.FitError)
	if !ok {
		t.Fatalf("err %v (%T), want *FitError", err, err)
	}
	if got, want := fe.Error(), "0/3 nodes are available: 3 Insufficient cpu."; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	_, err = f.SchedulePod(context.Background(), framework.NewCycleState(), pod("big2", "2", "9Gi"))
	if err == nil {
		t.Fatal("pod big2 fits nowhere but was scheduled")
	}
	if got, want := err.Error(), "0/3 nodes are available: 2 Insufficient cpu, 3 Insufficient memory."; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
}

// countingFilter rejects nodes whose name has a prefix; it counts calls, and offers
// the batch form when batch is set.
type countingFilter struct {
	reject string
	calls  int64
	batch  int64
}

func (p *countingFilter) Name() string { return "Counting" }
func (p *countingFilter) Filter(_ context.Context, _ *framework.CycleState, _ *v1.Pod, n *framework.NodeInfo) *framework.Status {
	if strings.HasPrefix(n.Node().Name, p.reject) {
		return framework.NewStatus(framework.Unschedulable, "rejected by prefix")
	}
	return nil
}

type batchFilter struct{ countingFilter }

func (p *batchFilter) FilterBatch(ctx context.Context, s *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, st []*framework.Status) {
	for i, n := range nodes {
		st[i] = p.Filter(ctx, s, pod, n)
	}
}

func TestBatchAndPlainFilterAgree(t *testing.T) {
	c := cache.New()
	for i := range 300 {
		prefix := "a"
		if i%3 == 0 {
			prefix = "b"
		}
		c.AddNode(node(fmt.Sprintf("%s%03d", prefix, i), "4", "8Gi"))
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	prof := &config.Profile{SchedulerName: "x", PercentageOfNodesToScore: nil, Plugins: &config.Plugins{
		Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "Counting"}}},
	}}
	pct100 := int32(100)
	for _, batch := range []bool{false, true} {
		reg := plugins.NewInTreeRegistry()
		reg["Counting"] = func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) {
			if batch {
				return &batchFilter{countingFilter{reject: "b"}}, nil
			}
			return &countingFilter{reject: "b"}, nil
		}
		f, err := runtime.New(context.Background(), reg, prof, runtime.Options{Lister: snap, Parallelism: 4, PercentageOfNodesToScore: pct100})
		if err != nil {
			t.Fatal(err)
		}
		res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), pod("p", "1", "1Gi"))
		if err != nil {
			t.Fatal(err)
		}
		if res.FeasibleNodes != 200 || res.EvaluatedNodes != 300 || !strings.HasPrefix(res.SuggestedHost, "a") {
			t.Fatalf("batch=%v: feasible %d evaluated %d host %q, want 200, 300, an a-node", batch, res.FeasibleNodes, res.EvaluatedNodes, res.SuggestedHost)
		}
	}
}

func TestNewRejectsBadProfiles(t *testing.T) {
	snap := cache.NewSnapshot()
	for _, tc := range []struct {
		prof *config.Profile
		want string
	}{
		{&config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "NoSuch"}}}}}, `unknown plugin "NoSuch"`},
		{&config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "DefaultBinder"}}}}}, `plugin "DefaultBinder" does not implement Filter`},
		{&config.Profile{SchedulerName: "p", PluginConfig: []config.PluginConfig{{Name: "NodeResourcesFit", Args: json.RawMessage(`{"scoringStrategy":{"type":"Random"}}`)}}}, `unsupported "Random"`},
		{&config.Profile{SchedulerName: "p", PluginConfig: []config.PluginConfig{{Name: "NodeResourcesFit", Args: json.RawMessage(`{"bogus":1}`)}}}, `unknown field "bogus"`},
		{&config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Bind: config.PluginSet{Disabled: []config.Plugin{{Name: "*"}}}}}, `at least one Bind plugin`},
	} {
		_, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), tc.prof, runtime.Options{Lister: snap})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("profile %+v: err %v, want it to contain %q", tc.prof.Plugins, err, tc.want)
		}
	}
}

func TestDisableAllScoreAndWeights(t *testing.T) {
	prof := &config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Score: config.PluginSet{
		Disabled: []config.Plugin{{Name: "*"}},
		Enabled:  []config.Plugin{{Name: "NodeResourcesFit", Weight: 5}},
	}}}
	f := newFramework(t, nil, prof, cache.NewSnapshot(), 0)
	got := f.PluginsAt(config.Score)
	if len(got) != 1 || got[0] != (config.Plugin{Name: "NodeResourcesFit", Weight: 5}) {
		t.Fatalf("score plugins %+v", got)
	}
	if n, want := len(f.PluginsAt(config.Filter)), len(config.DefaultPlugins()[config.Filter]); n != want {
		t.Fatalf("filter plugins: %d, want the %d defaults", n, want)
	}
}

// BenchmarkSchedulePod measures the scheduling algorithm alone (no API server): the
// default profile on 5000 nodes, each decision assumed in the cache before the next,
// as the scheduler's loop does.
func BenchmarkSchedulePod(b *testing.B) {
	c := cache.New()
	for i := range 5000 {
		c.AddNode(node(fmt.Sprintf("hollow-%d", i), "4", "16Gi", v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)))
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	f := newFramework(b, nil, nil, snap, 10)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.UpdateSnapshot(snap)
		p := pod(fmt.Sprintf("p-%d", i), "100m", "128Mi")
		res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), p)
		if err != nil {
			b.Fatal(err)
		}
		p.Spec.NodeName = res.SuggestedHost
		if err := c.AssumePod(p); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
}

// ctxFilter fails when its context is cancelled, as a wasm plugin that honours
// cancellation does.
type ctxFilter struct{}

func (ctxFilter) Name() string { return "CtxAware" }
func (ctxFilter) Filter(ctx context.Context, _ *framework.CycleState, _ *v1.Pod, _ *framework.NodeInfo) *framework.Status {
	if ctx.Err() != nil {
		return framework.AsStatus(ctx.Err())
	}
	return nil
}

func TestEarlyStopIsNotAnError(t *testing.T) {
	c := cache.New()
	for i := range 2000 {
		c.AddNode(node(fmt.Sprintf("n%d", i), "4", "8Gi"))
	}
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	reg := plugins.NewInTreeRegistry()
	reg["CtxAware"] = func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) {
		return ctxFilter{}, nil
	}
	prof := &config.Profile{SchedulerName: "p", Plugins: &config.Plugins{Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "CtxAware"}}}}}
	f, err := runtime.New(context.Background(), reg, prof, runtime.Options{Lister: snap, Parallelism: 16})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), pod(fmt.Sprintf("p%d", i), "100m", "1Mi"))
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if want := runtime.NumFeasibleNodesToFind(0, 2000); res.FeasibleNodes != want {
			t.Fatalf("cycle %d: %d feasible, want the adaptive %d", i, res.FeasibleNodes, want)
		}
	}
}
