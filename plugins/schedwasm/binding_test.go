package schedwasm

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// bindingProfile builds a profile whose only non-default plugin is the module of
// plugins/testdata/binding.wat, enabled at every point it serves (multiPoint).
func bindingProfile(t testing.TB, l *Loader, spec config.WasmPlugin) (*runtime.Framework, *plugin) {
	t.Helper()
	spec.Path = build(t, "wat:plugins/testdata/binding.wat")
	factory, err := l.Load(context.Background(), spec, "")
	if err != nil {
		t.Fatal(err)
	}
	reg := plugins.NewInTreeRegistry()
	var built *plugin
	reg[spec.Name] = func(ctx context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
		p, err := factory(ctx, args, h)
		if p != nil {
			built = p.(*plugin)
		}
		return p, err
	}
	c := cache.New()
	c.AddNode(node("n1", "", "4", "8Gi").Node())
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	prof := &config.Profile{SchedulerName: "default-scheduler", Plugins: &config.Plugins{MultiPoint: config.PluginSet{Enabled: []config.Plugin{{Name: spec.Name}}}}}
	f, err := runtime.New(context.Background(), reg, prof, runtime.Options{Lister: snap, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	for _, point := range []string{config.Reserve, config.Permit, config.PreBind, config.PostBind} {
		if len(f.PluginsAt(point)) == 0 || f.PluginsAt(point)[len(f.PluginsAt(point))-1].Name != spec.Name {
			t.Fatalf("the plugin is not enabled at %s: %v", point, f.PluginsAt(point))
		}
	}
	return f, built
}

func TestReserveUnreservePreBindPostBind(t *testing.T) {
	l := newLoader(t)
	f, p := bindingProfile(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "binding"}})
	ctx := context.Background()
	ok := pod("ok", "1", "1Gi")
	state := framework.NewCycleState()
	if st := f.RunReservePluginsReserve(ctx, state, ok, "n1"); !st.IsSuccess() {
		t.Fatalf("Reserve = %v", st)
	}
	if got := p.shared.Get("reserved"); got != 1 {
		t.Fatalf("after Reserve the counter is %d, want 1", got)
	}
	f.RunReservePluginsUnreserve(ctx, state, ok, "n1")
	if got := p.shared.Get("reserved"); got != 0 {
		t.Fatalf("after Unreserve the counter is %d, want 0", got)
	}
	// An Unreserve without a Reserve (of a cycle whose Reserve never ran) undoes nothing.
	f.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), ok, "n1")
	if got := p.shared.Get("reserved"); got != 0 {
		t.Fatalf("an Unreserve without Reserve moved the counter to %d", got)
	}
	deny := pod("deny", "1", "1Gi")
	if st := f.RunReservePluginsReserve(ctx, framework.NewCycleState(), deny, "n1"); !st.IsRejected() || st.Message() != "denied" || st.Plugin() != "binding" {
		t.Fatalf("Reserve of a denied pod = %v %q (plugin %q)", st.Code(), st.Message(), st.Plugin())
	}
	if st := f.RunPreBindPlugins(ctx, framework.NewCycleState(), deny, "n1"); !st.IsRejected() || st.Message() != "denied" {
		t.Fatalf("PreBind of a denied pod = %v %q", st.Code(), st.Message())
	}
	if st := f.RunPreBindPlugins(ctx, state, ok, "n1"); !st.IsSuccess() {
		t.Fatalf("PreBind = %v", st)
	}
	f.RunPostBindPlugins(ctx, state, ok, "n1")
	if p.shared.Get("prebound") != 1 || p.shared.Get("bound") != 1 {
		t.Fatalf("counters %v, want prebound and bound 1", p.shared.Snapshot())
	}
	// The counters are the plugin's, kept by the loader across a rebuild (a config swap).
	_, again := bindingProfile(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: "binding"}})
	if again.shared != p.shared {
		t.Fatal("a rebuilt plugin got counters of its own")
	}
}

func TestPermitWaitsAndALaterPermitAllowsByUID(t *testing.T) {
	f, _ := bindingProfile(t, newLoader(t), config.WasmPlugin{Spec: modulespec.Spec{Name: "binding"}})
	ctx := context.Background()
	w1, w2 := pod("w1", "1", "1Gi"), pod("w2", "1", "1Gi")
	for _, p := range []*v1.Pod{w1, w2} {
		if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1"); !st.IsWait() {
			t.Fatalf("Permit of %s = %v, want Wait", p.Name, st)
		}
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), pod("all", "1", "1Gi"), "n1"); !st.IsSuccess() {
		t.Fatalf("Permit of the releasing pod = %v", st)
	}
	for _, p := range []*v1.Pod{w1, w2} {
		if st := f.WaitOnPermit(ctx, p); !st.IsSuccess() {
			t.Fatalf("WaitOnPermit of %s = %v, want allowed", p.Name, st)
		}
	}
	// Alone, a waiting pod is rejected when its 200 ms are up.
	w3 := pod("w3", "1", "1Gi")
	f.RunPermitPlugins(ctx, framework.NewCycleState(), w3, "n1")
	if st := f.WaitOnPermit(ctx, w3); !st.IsRejected() || !strings.Contains(st.Message(), "timeout") || st.Plugin() != "binding" {
		t.Fatalf("WaitOnPermit of a pod nobody allows = %v %q", st.Code(), st.Message())
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), pod("deny", "1", "1Gi"), "n1"); !st.IsRejected() || st.Message() != "denied" {
		t.Fatalf("Permit of a denied pod = %v %q", st.Code(), st.Message())
	}
}

// TestBindingPointFailures: a trap, a timeout and (for Permit) a Wait without a timeout at
// every new point, under both failure policies.
func TestBindingPointFailures(t *testing.T) {
	l := newLoader(t)
	ctx := context.Background()
	short := metav1.Duration{Duration: 20 * time.Millisecond}
	for _, policy := range []string{"Fail", "Ignore"} {
		name := "binding-" + strings.ToLower(policy)
		f, _ := bindingProfile(t, l, config.WasmPlugin{Spec: modulespec.Spec{Name: name, FailurePolicy: policy, Timeout: short}})
		for _, tc := range []struct{ pod, reason, kind string }{
			{"trap", "trap", "reserve"}, {"loop", "timeout", "reserve"},
			{"trap", "trap", "permit"}, {"loop", "timeout", "permit"}, {"nowait", "garbage result", "permit"},
			{"trap", "trap", "prebind"}, {"loop", "timeout", "prebind"},
			{"trap", "trap", "unreserve"}, {"loop", "timeout", "unreserve"},
			{"trap", "trap", "postbind"}, {"loop", "timeout", "postbind"},
			{"trap", "trap", "queueinghint"}, {"loop", "timeout", "queueinghint"},
		} {
			before := failures(l, name, tc.kind)
			p := pod(tc.pod, "1", "1Gi")
			var st *framework.Status
			switch tc.kind {
			case "reserve":
				st = f.RunReservePluginsReserve(ctx, framework.NewCycleState(), p, "n1")
			case "permit":
				st = f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
			case "prebind":
				st = f.RunPreBindPlugins(ctx, framework.NewCycleState(), p, "n1")
			case "unreserve":
				f.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), p, "n1")
			case "postbind":
				f.RunPostBindPlugins(ctx, framework.NewCycleState(), p, "n1")
			case "queueinghint":
				r := f.QueueingHint(ctx, p, map[string]struct{}{name: {}}, framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Update}, nil, node("n2", "", "1", "1Gi").Node())
				if !r.Queue || r.Err == nil || !strings.Contains(r.Err.Error(), tc.reason) {
					t.Errorf("%s %s: a failing hint gave %+v, want Queue with the %s", policy, tc.pod, r, tc.reason)
				}
			}
			switch tc.kind {
			case "reserve", "permit", "prebind":
				if policy == "Fail" && (st.Code() != framework.Error || !strings.Contains(st.Message(), tc.reason) || st.Plugin() != name) {
					t.Errorf("Fail: %s of %s = %v %q (plugin %q), want an Error naming the %s", tc.kind, tc.pod, st.Code(), st.Message(), st.Plugin(), tc.reason)
				}
				if policy == "Ignore" && !st.IsSuccess() {
					t.Errorf("Ignore: %s of %s = %v %q, want Success", tc.kind, tc.pod, st.Code(), st.Message())
				}
			}
			if got := failures(l, name, tc.kind); got != before+1 {
				t.Errorf("%s: %s of %s: failures metric %v, want %v", policy, tc.kind, tc.pod, got, before+1)
			}
		}
	}
}

func TestQueueingHintOfAWasmPlugin(t *testing.T) {
	f, p := bindingProfile(t, newLoader(t), config.WasmPlugin{Spec: modulespec.Spec{Name: "binding"}})
	ctx := context.Background()
	evs, err := p.EventsToRegister(ctx)
	if err != nil || len(evs) != 1 || evs[0].Event != (framework.ClusterEvent{Resource: "Node", Action: framework.Add | framework.Update}) || evs[0].QueueingHintFn == nil {
		t.Fatalf("EventsToRegister = %+v, %v", evs, err)
	}
	rej := map[string]struct{}{"binding": {}}
	n := node("n2", "", "1", "1Gi").Node()
	for _, tc := range []struct {
		ev   framework.ClusterEvent
		want bool
	}{
		{framework.ClusterEvent{Resource: "Node", Action: framework.Add}, true},
		{framework.ClusterEvent{Resource: "Node", Action: framework.Update}, false},
		{framework.ClusterEvent{Resource: "Pod", Action: framework.Delete}, false}, // not registered
	} {
		if r := f.QueueingHint(ctx, pod("p", "1", "1Gi"), rej, tc.ev, n, n); r.Queue != tc.want || r.Err != nil {
			t.Errorf("%+v: %+v, want Queue %v", tc.ev, r, tc.want)
		}
	}
}
