package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

// gate holds every pod at Permit for wait, or allows the pod named "allow".
type gate struct {
	wait   time.Duration
	events []framework.ClusterEventWithHint
}

func (g *gate) Name() string { return "Gate" }
func (g *gate) Permit(_ context.Context, _ *framework.CycleState, pod *v1.Pod, _ string) (*framework.Status, time.Duration) {
	switch pod.Name {
	case "allow":
		return nil, 0
	case "deny":
		return framework.NewStatus(framework.Unschedulable, "denied by gate"), 0
	}
	return framework.NewStatus(framework.Wait), g.wait
}
func (g *gate) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return g.events, nil
}

func gateFramework(t *testing.T, g *gate) *runtime.Framework {
	t.Helper()
	reg := plugins.NewInTreeRegistry()
	reg["Gate"] = func(context.Context, json.RawMessage, framework.Handle) (framework.Plugin, error) { return g, nil }
	prof := &config.Profile{SchedulerName: "default-scheduler", Plugins: &config.Plugins{Permit: config.PluginSet{Enabled: []config.Plugin{{Name: "Gate"}}}}}
	c := cache.New()
	c.AddNode(node("n1", "4", "8Gi"))
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	return newFramework(t, reg, prof, snap, 0)
}

func TestPermitWaitIsAllowedByUID(t *testing.T) {
	f := gateFramework(t, &gate{wait: time.Hour})
	ctx := context.Background()
	p := pod("held", "100m", "1Mi")
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1"); !st.IsWait() {
		t.Fatalf("Permit = %v, want Wait", st)
	}
	wp := f.GetWaitingPod(p.UID)
	if wp == nil || wp.NodeName() != "n1" || strings.Join(wp.GetPendingPlugins(), ",") != "Gate" {
		t.Fatalf("waiting pod = %v", wp)
	}
	n := 0
	f.IterateOverWaitingPods(func(framework.WaitingPod) { n++ })
	if n != 1 {
		t.Fatalf("IterateOverWaitingPods saw %d pods, want 1", n)
	}
	if wp.Allow("Other") {
		t.Fatal("Allow by a plugin that does not hold the pod succeeded")
	}
	if !wp.Allow("Gate") {
		t.Fatal("Allow by the holding plugin failed")
	}
	if st := f.WaitOnPermit(ctx, p); !st.IsSuccess() {
		t.Fatalf("WaitOnPermit = %v, want Success", st)
	}
	if f.GetWaitingPod(p.UID) != nil {
		t.Fatal("the pod still waits after its wait ended")
	}
}

func TestPermitWaitRejectedAndTimedOut(t *testing.T) {
	ctx := context.Background()
	f := gateFramework(t, &gate{wait: time.Hour})
	p := pod("held", "100m", "1Mi")
	f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
	f.GetWaitingPod(p.UID).Reject("Gate", "group cannot fit")
	if st := f.WaitOnPermit(ctx, p); !st.IsRejected() || st.Message() != "group cannot fit" || st.Plugin() != "Gate" {
		t.Fatalf("WaitOnPermit after Reject = %v (plugin %q)", st, st.Plugin())
	}

	f = gateFramework(t, &gate{wait: time.Millisecond})
	f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
	if st := f.WaitOnPermit(ctx, p); !st.IsRejected() || !strings.Contains(st.Message(), "timeout") {
		t.Fatalf("WaitOnPermit after the timeout = %v, want a rejection naming the timeout", st)
	}

	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), pod("deny", "1m", "1Mi"), "n1"); !st.IsRejected() || st.Plugin() != "Gate" {
		t.Fatalf("Permit of a denied pod = %v", st)
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), pod("allow", "1m", "1Mi"), "n1"); !st.IsSuccess() {
		t.Fatalf("Permit of an allowed pod = %v", st)
	}
	if st := f.WaitOnPermit(ctx, pod("allow", "1m", "1Mi")); !st.IsSuccess() {
		t.Fatalf("WaitOnPermit of a pod that never waited = %v", st)
	}

	f = gateFramework(t, &gate{wait: time.Hour})
	f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if st := f.WaitOnPermit(cctx, p); st.Code() != framework.Error {
		t.Fatalf("WaitOnPermit with an ended context = %v, want Error", st)
	}
	f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n1")
	f.RejectWaitingPods("profile replaced")
	if st := f.WaitOnPermit(ctx, p); !st.IsRejected() {
		t.Fatalf("WaitOnPermit after RejectWaitingPods = %v", st)
	}
}

func TestQueueingHint(t *testing.T) {
	nodeAdd := framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}
	podDelete := framework.ClusterEvent{Resource: framework.ResourcePod, Action: framework.Delete}
	onlyLabelled := func(_ context.Context, _ *v1.Pod, _ framework.ClusterEvent, _, newObj any) (framework.QueueingHint, error) {
		if n, ok := newObj.(*v1.Node); ok && n.Labels["gpu"] == "true" {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	}
	failing := func(context.Context, *v1.Pod, framework.ClusterEvent, any, any) (framework.QueueingHint, error) {
		return framework.QueueSkip, errors.New("boom")
	}
	g := &gate{events: []framework.ClusterEventWithHint{{Event: nodeAdd, QueueingHintFn: onlyLabelled}}}
	f := gateFramework(t, g)
	ctx := context.Background()
	p := pod("p", "1m", "1Mi")
	gpu := node("gpu", "1", "1Gi", "gpu", "true")
	plain := node("plain", "1", "1Gi")
	for _, tc := range []struct {
		name      string
		rejectors []string
		ev        framework.ClusterEvent
		newObj    any
		want      bool
	}{
		{"no rejector recorded", nil, nodeAdd, plain, true},
		{"a native plugin without registrations", []string{"NodeResourcesFit"}, nodeAdd, plain, true},
		{"hint says Skip", []string{"Gate"}, nodeAdd, plain, false},
		{"hint says Queue", []string{"Gate"}, nodeAdd, gpu, true},
		{"event not registered", []string{"Gate"}, podDelete, nil, false},
		{"one of two rejectors may be helped", []string{"Gate", "NodeResourcesFit"}, nodeAdd, plain, true},
	} {
		rej := map[string]struct{}{}
		for _, r := range tc.rejectors {
			rej[r] = struct{}{}
		}
		if got := f.QueueingHint(ctx, p, rej, tc.ev, nil, tc.newObj); got.Queue != tc.want {
			t.Errorf("%s: Queue = %v, want %v", tc.name, got.Queue, tc.want)
		}
	}
	g.events = []framework.ClusterEventWithHint{{Event: nodeAdd, QueueingHintFn: failing}}
	f = gateFramework(t, g)
	if r := f.QueueingHint(ctx, p, map[string]struct{}{"Gate": {}}, nodeAdd, nil, plain); !r.Queue || r.Err == nil {
		t.Errorf("a failing hint: %+v, want Queue with its error", r)
	}
}
