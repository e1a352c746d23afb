package gangscheduling_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/gangscheduling"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

// groups is a GroupLister over fixed objects.
type groups struct {
	pgs  map[string]*schedulingv1beta1.PodGroup
	pods []*v1.Pod
}

func (g *groups) PodGroup(ns, name string) (*schedulingv1beta1.PodGroup, error) {
	if pg, ok := g.pgs[name]; ok {
		return pg, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "podgroups"}, name)
}

func (g *groups) GroupPods(ns, group string) ([]*v1.Pod, error) { return g.pods, nil }

func member(name, group, node string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{NodeName: node, SchedulingGroup: &v1.PodSchedulingGroup{PodGroupName: &group}}}
}

func gang(name string, min int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: min}}}}
}

// profile runs GangScheduling (on g) at PreFilter, Reserve and Permit of a runtime, whose
// waiting pods it sees.
func profile(t *testing.T, g *groups) *runtime.Framework {
	t.Helper()
	reg := plugins.NewInTreeRegistry()
	reg[gangscheduling.Name] = func(_ context.Context, _ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
		return gangscheduling.NewWith(g, h.(framework.WaitingPodHandle), time.Hour), nil
	}
	f, err := runtime.New(context.Background(), reg, &config.Profile{SchedulerName: "default-scheduler"},
		runtime.Options{Lister: cache.NewSnapshot(), Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGangPreFilterPermitUnreserve(t *testing.T) {
	ctx := context.Background()
	g := &groups{pgs: map[string]*schedulingv1beta1.PodGroup{"a": gang("a", 3), "basic": {
		ObjectMeta: metav1.ObjectMeta{Name: "basic", Namespace: "default"},
		Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}}}}}
	f := profile(t, g)
	a0, a1, a2 := member("a0", "a", ""), member("a1", "a", ""), member("a2", "a", "")

	g.pods = []*v1.Pod{a0, a1}
	if _, st := f.RunPreFilterPlugins(ctx, framework.NewCycleState(), a0); st.Code() != framework.UnschedulableAndUnresolvable ||
		!strings.Contains(st.Message(), `pod group "a" has 2 of its minCount 3 pods`) {
		t.Fatalf("PreFilter with 2 of 3 members: %v", st)
	}
	if _, st := f.RunPreFilterPlugins(ctx, framework.NewCycleState(), member("x", "missing", "")); !strings.Contains(st.Message(), `pod group "missing" not found`) {
		t.Fatalf("PreFilter of a pod whose group does not exist: %v", st)
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), member("b", "basic", ""), "n"); !st.IsSuccess() {
		t.Fatalf("Permit of a basic group's pod: %v, want Success", st)
	}

	g.pods = []*v1.Pod{a0, a1, a2}
	if _, st := f.RunPreFilterPlugins(ctx, framework.NewCycleState(), a0); !st.IsSuccess() {
		t.Fatalf("PreFilter with all members: %v", st)
	}
	// Two wait; the third completes the group and releases them.
	for _, p := range []*v1.Pod{a0, a1} {
		if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), p, "n"); !st.IsWait() {
			t.Fatalf("Permit of %s: %v, want Wait", p.Name, st)
		}
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), a2, "n"); !st.IsSuccess() {
		t.Fatalf("Permit of the last member: %v, want Success", st)
	}
	for _, p := range []*v1.Pod{a0, a1} {
		if st := f.WaitOnPermit(ctx, p); !st.IsSuccess() {
			t.Fatalf("%s after the group completed: %v", p.Name, st)
		}
	}

	// A bound member counts: one bound, one waiting, the third completes.
	a0.Spec.NodeName = "n"
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), a1, "n"); !st.IsWait() {
		t.Fatalf("Permit of a1 with a0 bound: %v, want Wait", st)
	}
	if st := f.RunPermitPlugins(ctx, framework.NewCycleState(), a2, "n"); !st.IsSuccess() {
		t.Fatalf("Permit of a2 with a0 bound and a1 waiting: %v, want Success", st)
	}
	f.WaitOnPermit(ctx, a1)

	// A member that does not end bound releases the others.
	a0.Spec.NodeName = ""
	f.RunPermitPlugins(ctx, framework.NewCycleState(), a0, "n")
	f.RunPermitPlugins(ctx, framework.NewCycleState(), a1, "n")
	f.RunReservePluginsUnreserve(ctx, framework.NewCycleState(), a1, "n")
	if st := f.WaitOnPermit(ctx, a0); !st.IsRejected() || !strings.Contains(st.Message(), `pod group "a" released: member a1 was not bound`) {
		t.Fatalf("a0 after a1 was unreserved: %v, want released", st)
	}
}
