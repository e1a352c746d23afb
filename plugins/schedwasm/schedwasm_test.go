package schedwasm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

func newLoader(t testing.TB) *Loader {
	t.Helper()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return NewLoader(h)
}

// build returns the module of an example or test plugin: "go:<dir>" or "wat:<file>".
func build(t testing.TB, src string) string {
	kind, path, _ := strings.Cut(src, ":")
	if kind == "go" {
		return wasmbuild.Go(t, path)
	}
	return wasmbuild.WAT(t, path)
}

func loadPlugin(t *testing.T, l *Loader, spec config.WasmPlugin, src, args string) (framework.Plugin, error) {
	t.Helper()
	spec.Path = build(t, src)
	f, err := l.Load(context.Background(), spec, "")
	if err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if args != "" {
		raw = json.RawMessage(args)
	}
	return f(context.Background(), raw, nil)
}

func mustPlugin(t *testing.T, l *Loader, spec config.WasmPlugin, src, args string) framework.Plugin {
	t.Helper()
	p, err := loadPlugin(t, l, spec, src, args)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func node(name, zone string, cpu, mem string, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	labels := map[string]string{"kubernetes.io/hostname": name}
	if zone != "" {
		labels["topology.kubernetes.io/zone"] = zone
	}
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1", Labels: labels},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

func pod(name, cpu, mem string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: "1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}}}}}}
}

func TestLoaderErrorsNameThePluginAndCause(t *testing.T) {
	l := newLoader(t)
	tests := []struct {
		spec config.WasmPlugin
		src  string
		args string
		want string
	}{
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "gone", Path: "missing/plugin.wasm"}}, "", "", "plugin gone: missing/plugin.wasm: open base/missing/plugin.wasm: no such file or directory"},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "pack"}}, "wat:plugins/testdata/v2.wat", "", "exports wasmkube_abi_version 2, this host supports 1"},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "pol", FailurePolicy: "Sometimes"}}, "wat:plugins/testdata/trap.wat", "", `failurePolicy: "Sometimes": must be Fail or Ignore`},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "zones"}}, "go:wasm-examples/go/zone-filter", "", `plugin zones: `},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "zones"}}, "go:wasm-examples/go/zone-filter", `{"zones": []}`, "wasmkube_init rejected the plugin (code 1): args.zones: at least one zone is required"},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "zones"}}, "go:wasm-examples/go/zone-filter", `{"zones": 3}`, "wasmkube_init rejected the plugin (code 1): args: json: cannot unmarshal number"},
		{config.WasmPlugin{Spec: modulespec.Spec{Name: "broken"}}, "wat:plugins/testdata/alwaystrap.wat", "", "smoke call of wasmkube_score: wasm plugin broken: score: trap: wasm error: unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.spec.Name+tt.args, func(t *testing.T) {
			var err error
			if tt.src == "" {
				_, err = l.Load(context.Background(), tt.spec, "base")
			} else {
				_, err = loadPlugin(t, l, tt.spec, tt.src, tt.args)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			var le *wasmhost.LoadError
			if !errors.As(err, &le) || le.Plugin != tt.spec.Name {
				t.Errorf("error %v is not a *LoadError for plugin %s", err, tt.spec.Name)
			}
		})
	}
}

// The runtime finds extension points by type assertion: a wasm plugin must implement
// exactly the entry points its module exports.
func TestPluginImplementsExactlyItsExports(t *testing.T) {
	l := newLoader(t)
	tests := []struct {
		src    string
		args   string
		points []string
		batch  bool
		norm   bool
	}{
		{"wat:wasm-examples/wat/drain-filter/drain-filter.wat", "", []string{config.Filter}, true, false},
		{"go:wasm-examples/go/pack-score", "", []string{config.Score}, true, false},
		{"wat:plugins/testdata/stateful.wat", "", []string{config.PreFilter, config.Filter}, true, false},
		{"wat:plugins/testdata/skipscore.wat", "", []string{config.PreScore, config.Score}, true, false},
		{"go:sdk/go/internal/testguest", "", []string{config.PreFilter, config.Filter, config.PostFilter, config.PreScore, config.Score}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "p"}}, tt.src, tt.args)
			for _, point := range []string{config.PreFilter, config.Filter, config.PostFilter, config.PreScore, config.Score, config.Reserve, config.Bind} {
				want := false
				for _, w := range tt.points {
					want = want || w == point
				}
				if got := runtime.Implements(p, point); got != want {
					t.Errorf("implements %s: %v, want %v", point, got, want)
				}
			}
			if sp, ok := p.(framework.ScorePlugin); ok {
				if _, ok := p.(framework.BatchScorePlugin); !ok {
					t.Error("score plugin without ScoreBatch")
				}
				if got := sp.ScoreExtensions() != nil; got != tt.norm {
					t.Errorf("ScoreExtensions present: %v, want %v", got, tt.norm)
				}
			}
			if _, ok := p.(framework.FilterPlugin); ok {
				if _, ok := p.(framework.BatchFilterPlugin); !ok {
					t.Error("filter plugin without FilterBatch")
				}
			}
		})
	}
}

func failures(l *Loader, plugin, kind string) float64 {
	var m dto.Metric
	_ = l.host.Failures().WithLabelValues(plugin, kind).Write(&m)
	return m.GetCounter().GetValue()
}

func TestFailurePolicy(t *testing.T) {
	l := newLoader(t)
	bad := pod("p", "1", "1Gi")
	bad.Labels = map[string]string{"bad": ""}
	nodes := []*framework.NodeInfo{node("n0", "", "4", "8Gi"), node("n1", "", "4", "8Gi")}
	ctx := context.Background()

	t.Run("filter/Fail rejects the batch with the reason", func(t *testing.T) {
		p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "trap-fail", FailurePolicy: "Fail"}}, "wat:plugins/testdata/trap.wat", "").(framework.BatchFilterPlugin)
		st := make([]*framework.Status, 2)
		p.FilterBatch(ctx, framework.NewCycleState(), bad, nodes, st)
		for i, s := range st {
			if s.Code() != framework.UnschedulableAndUnresolvable || !strings.Contains(s.Message(), "wasm plugin trap-fail: filter: trap: wasm error: unreachable") || s.Plugin() != "trap-fail" {
				t.Errorf("node %d: %v %q %q", i, s.Code(), s.Message(), s.Plugin())
			}
		}
		if failures(l, "trap-fail", "filter") != 1 {
			t.Errorf("failures metric %v, want 1", failures(l, "trap-fail", "filter"))
		}
	})
	t.Run("filter/Ignore passes the batch", func(t *testing.T) {
		p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "trap-ignore", FailurePolicy: "Ignore"}}, "wat:plugins/testdata/trap.wat", "").(framework.BatchFilterPlugin)
		st := make([]*framework.Status, 2)
		p.FilterBatch(ctx, framework.NewCycleState(), bad, nodes, st)
		if st[0] != nil || st[1] != nil {
			t.Errorf("statuses %v %v, want both nil", st[0], st[1])
		}
		if failures(l, "trap-ignore", "filter") != 1 {
			t.Errorf("failures metric %v, want 1 (Ignore still counts)", failures(l, "trap-ignore", "filter"))
		}
	})
	t.Run("score/Fail fails the cycle", func(t *testing.T) {
		p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "garbage-fail"}}, "wat:plugins/testdata/garbage.wat", "").(framework.BatchScorePlugin)
		scores := []int64{-1, -1}
		s := p.ScoreBatch(ctx, framework.NewCycleState(), bad, nodes, scores)
		if s.Code() != framework.Error || !strings.Contains(s.Message(), "score 1000 for node n0 is outside [0, 100]") {
			t.Errorf("status %v %q", s.Code(), s.Message())
		}
	})
	t.Run("score/Ignore scores 0", func(t *testing.T) {
		p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "garbage-ignore", FailurePolicy: "Ignore"}}, "wat:plugins/testdata/garbage.wat", "").(framework.BatchScorePlugin)
		scores := []int64{-1, -1}
		if s := p.ScoreBatch(ctx, framework.NewCycleState(), bad, nodes, scores); s != nil || scores[0] != 0 || scores[1] != 0 {
			t.Errorf("status %v scores %v, want nil and [0 0]", s, scores)
		}
		good := pod("q", "1", "1Gi")
		if s := p.ScoreBatch(ctx, framework.NewCycleState(), good, nodes, scores); s != nil || scores[0] != 7 || scores[1] != 7 {
			t.Errorf("after the failure: status %v scores %v, want [7 7]", s, scores)
		}
	})
}

func TestDrainFilterWAT(t *testing.T) {
	p := mustPlugin(t, newLoader(t), config.WasmPlugin{Spec: modulespec.Spec{Name: "drain"}}, "wat:wasm-examples/wat/drain-filter/drain-filter.wat", "").(framework.BatchFilterPlugin)
	nodes := []*framework.NodeInfo{node("n0", "", "4", "8Gi"), node("n1", "", "4", "8Gi"), node("n2", "", "4", "8Gi")}
	nodes[1].Node().Labels["wasmkube.io/drain"] = ""
	st := make([]*framework.Status, 3)
	p.FilterBatch(context.Background(), framework.NewCycleState(), pod("p", "1", "1Gi"), nodes, st)
	if st[0] != nil || st[2] != nil || st[1].Code() != framework.UnschedulableAndUnresolvable || st[1].Message() != "node is draining" {
		t.Errorf("statuses %v / %v %q / %v", st[0], st[1].Code(), st[1].Message(), st[2])
	}
}

// A profile mixes native plugins (the default filters, DefaultBinder) with wasm ones: the
// zone-filter restricts zones and pack-score or spread-score chooses among the rest.
func TestProfileMixesWasmAndNativePlugins(t *testing.T) {
	l := newLoader(t)
	for _, tt := range []struct {
		score string
		want  string
	}{
		{"pack-score", "b-busy"},
		{"spread-score", "b-idle"},
	} {
		t.Run(tt.score, func(t *testing.T) {
			registry := plugins.NewInTreeRegistry()
			for _, w := range []config.WasmPlugin{
				{Spec: modulespec.Spec{Name: "zone", Path: wasmbuild.Go(t, "wasm-examples/go/zone-filter")}},
				{Spec: modulespec.Spec{Name: "policy", Path: wasmbuild.Go(t, "wasm-examples/go/"+tt.score)}},
			} {
				f, err := l.Load(context.Background(), w, "")
				if err != nil {
					t.Fatal(err)
				}
				registry[w.Name] = f
			}
			profile := &config.Profile{
				SchedulerName: "default-scheduler",
				Plugins: &config.Plugins{
					Filter: config.PluginSet{Enabled: []config.Plugin{{Name: "zone"}}},
					// Scoring is the wasm policy's alone.
					PreScore: config.PluginSet{Disabled: []config.Plugin{{Name: "*"}}},
					Score:    config.PluginSet{Enabled: []config.Plugin{{Name: "policy", Weight: 2}}, Disabled: []config.Plugin{{Name: "*"}}},
				},
				PluginConfig: []config.PluginConfig{{Name: "zone", Args: json.RawMessage(`{"zones": ["zone-b"]}`)}},
			}
			busy := pod("running", "3", "6Gi")
			snapshot := cache.NewSnapshotFrom(
				node("a-idle", "zone-a", "4", "8Gi"),
				node("a-busy", "zone-a", "4", "8Gi", busy),
				node("b-idle", "zone-b", "4", "8Gi"),
				node("b-busy", "zone-b", "4", "8Gi", busy),
				node("b-full", "zone-b", "4", "8Gi", pod("big", "4", "8Gi")),
			)
			fw, err := runtime.New(context.Background(), registry, profile, runtime.Options{Lister: snapshot, Parallelism: 2})
			if err != nil {
				t.Fatal(err)
			}
			res, err := fw.SchedulePod(context.Background(), framework.NewCycleState(), pod("new", "500m", "1Gi"))
			if err != nil {
				t.Fatal(err)
			}
			if res.SuggestedHost != tt.want {
				t.Errorf("%s chose %s, want %s", tt.score, res.SuggestedHost, tt.want)
			}
			// The pod's annotation overrides the zones: only zone-a nodes are feasible.
			p := pod("moved", "500m", "1Gi")
			p.Annotations = map[string]string{"wasmkube.io/zone": "zone-a"}
			res, err = fw.SchedulePod(context.Background(), framework.NewCycleState(), p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(res.SuggestedHost, "a-") {
				t.Errorf("annotated pod went to %s, want a zone-a node", res.SuggestedHost)
			}
			// No zone fits: the diagnosis carries the wasm plugin's reasons.
			p.Annotations["wasmkube.io/zone"] = "zone-z"
			_, err = fw.SchedulePod(context.Background(), framework.NewCycleState(), p)
			if err == nil || !strings.Contains(err.Error(), "is not allowed") {
				t.Errorf("got %v, want a FitError with the zone-filter's reason", err)
			}
		})
	}
}

// One loaded module serves two configurations (two profiles) with different args.
func TestOneModuleTwoConfigurations(t *testing.T) {
	l := newLoader(t)
	f, err := l.Load(context.Background(), config.WasmPlugin{Spec: modulespec.Spec{Name: "zone", Path: wasmbuild.Go(t, "wasm-examples/go/zone-filter")}}, "")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []*framework.NodeInfo{node("a", "zone-a", "4", "8Gi"), node("b", "zone-b", "4", "8Gi")}
	for _, tt := range []struct{ args, pass string }{{`{"zones":["zone-a"]}`, "a"}, {`{"zones":["zone-b"]}`, "b"}} {
		p, err := f(context.Background(), json.RawMessage(tt.args), nil)
		if err != nil {
			t.Fatal(err)
		}
		st := make([]*framework.Status, 2)
		p.(framework.BatchFilterPlugin).FilterBatch(context.Background(), framework.NewCycleState(), pod("p", "1", "1Gi"), nodes, st)
		for i, n := range nodes {
			if pass := st[i] == nil; pass != (n.Node().Name == tt.pass) {
				t.Errorf("args %s: node %s passed=%v", tt.args, n.Node().Name, pass)
			}
		}
	}
}

// Misbehaving plugins in a real profile: the scheduler keeps scheduling. With Ignore the pod
// lands as if the plugin were absent; with Fail the nodes are rejected with the failure as
// reason, and the next pod (which does not trigger the misbehaviour) schedules normally.
func TestMisbehavingPluginInAProfile(t *testing.T) {
	l := newLoader(t)
	for _, wat := range []string{"loop.wat", "trap.wat", "grow.wat", "garbage.wat", "badindex.wat", "badptr.wat", "exit.wat"} {
		for _, policy := range []string{"Fail", "Ignore"} {
			t.Run(wat+"/"+policy, func(t *testing.T) {
				spec := config.WasmPlugin{Spec: modulespec.Spec{Name: "bad", Path: wasmbuild.WAT(t, "plugins/testdata/"+wat), FailurePolicy: policy, Timeout: metav1.Duration{Duration: 50 * time.Millisecond}, MemoryLimit: resource.MustParse("2Mi")}}
				f, err := l.Load(context.Background(), spec, "")
				if err != nil {
					t.Fatal(err)
				}
				registry := plugins.NewInTreeRegistry()
				registry["bad"] = f
				profile := &config.Profile{SchedulerName: "s", Plugins: &config.Plugins{
					Filter:   config.PluginSet{Enabled: []config.Plugin{{Name: "bad"}}},
					PreScore: config.PluginSet{Disabled: []config.Plugin{{Name: "*"}}},
				}}
				snapshot := cache.NewSnapshotFrom(node("n0", "", "4", "8Gi"), node("n1", "", "4", "8Gi"))
				fw, err := runtime.New(context.Background(), registry, profile, runtime.Options{Lister: snapshot, Parallelism: 2})
				if wat == "badptr.wat" {
					// Its Score faults on every call: the smoke call refuses the module.
					if err == nil || !strings.Contains(err.Error(), "smoke call of wasmkube_score: wasm plugin bad: score: bad pointer: host function node_name") {
						t.Fatalf("got %v, want the smoke call to refuse the module", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				bad := pod("bad", "1", "1Gi")
				bad.Labels = map[string]string{"bad": ""}
				res, err := fw.SchedulePod(context.Background(), framework.NewCycleState(), bad)
				if policy == "Ignore" && (err != nil || res.SuggestedHost == "") {
					t.Errorf("Ignore: got %v %q, want the pod scheduled", err, res.SuggestedHost)
				}
				if policy == "Fail" && (err == nil || !strings.Contains(err.Error(), "wasm plugin bad: filter")) {
					t.Errorf("Fail: got %v, want the nodes rejected with the plugin's failure", err)
				}
				res, err = fw.SchedulePod(context.Background(), framework.NewCycleState(), pod("good", "1", "1Gi"))
				if err != nil || res.SuggestedHost == "" {
					t.Errorf("next pod: %v %q, want it scheduled", err, res.SuggestedHost)
				}
			})
		}
	}
}

// A call cancelled by the caller is an Error whatever the failure policy, never a
// rejection (Fail) or a pass (Ignore).
func TestCancellationIsNeitherRejectionNorPass(t *testing.T) {
	l := newLoader(t)
	for _, policy := range []string{"Fail", "Ignore"} {
		p := mustPlugin(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "loop-" + policy, FailurePolicy: policy, Timeout: metav1.Duration{Duration: time.Hour}}},
			"wat:plugins/testdata/loop.wat", "").(framework.BatchFilterPlugin)
		bad := pod("bad", "1", "1Gi")
		bad.Labels = map[string]string{"bad": ""}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		st := make([]*framework.Status, 1)
		p.FilterBatch(ctx, framework.NewCycleState(), bad, []*framework.NodeInfo{node("n0", "", "4", "8Gi")}, st)
		cancel()
		if st[0].Code() != framework.Error || !strings.Contains(st[0].Message(), "canceled") {
			t.Errorf("%s: status %v %q, want Error (canceled)", policy, st[0].Code(), st[0].Message())
		}
	}
}

// The smoke call runs a module's entry points as one cycle does: a Filter that needs its
// PreFilter's cycle state gets it, and a Score that its PreScore's Skip leaves out of
// every cycle is not called. Both used to reject plugins that follow docs/abi.md.
func TestSmokeCallFollowsTheCycle(t *testing.T) {
	mustPlugin(t, newLoader(t), config.WasmPlugin{Spec: modulespec.Spec{Name: "cycle"}}, "wat:plugins/testdata/cycle.wat", "")
}
