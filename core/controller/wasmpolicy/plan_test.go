package wasmpolicy

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

func node(name string, ready bool, lbls map[string]string) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}}}
}

func lease(comp, holder string, renewed time.Time, profiles string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: report.IdentityLeaseName(comp, holder), Namespace: report.IdentityNamespace,
		Labels: map[string]string{report.ComponentLabel: comp}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	if profiles != "" {
		l.Annotations = map[string]string{report.SchedulerNamesAnnotation: profiles}
	}
	return l
}

func TestTargets(t *testing.T) {
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	nodes := []*corev1.Node{node("a", true, map[string]string{"disk": "ssd"}), node("b", true, nil), node("c", false, map[string]string{"disk": "ssd"}),
		node("h", true, map[string]string{"disk": "ssd", HollowLabel: "true"}), node("hp", true, map[string]string{"disk": "ssd", HollowLabel: "true"})}
	nodes[4].Annotations = map[string]string{report.LoadsPoliciesAnnotation: "true"} // a hollow node that loads policies
	leases := []*coordinationv1.Lease{
		lease("apiserver", "api-1", now.Add(-10*time.Second), ""),
		lease("apiserver", "api-2", now.Add(-time.Minute), ""), // expired: gone
		lease("scheduler", "s-1", now, "default-scheduler,batch"),
		lease("scheduler", "s-2", now, "batch"),
	}
	probe := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe,
		Kubelet: &policyv1alpha1.KubeletHook{HookName: "h", NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"disk": "ssd"}}}}}
	validate := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate}}
	score := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerScore,
		Scheduler: &policyv1alpha1.SchedulerHook{SchedulerName: "batch"}}}
	filter := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerFilter}}
	for _, tt := range []struct {
		p    *policyv1alpha1.WasmPolicy
		want string
	}{
		{probe, "kubelet/a kubelet/hp"}, // b does not match, c is not Ready, h is simulated and loads none
		{validate, "apiserver/api-1"},
		{score, "scheduler/s-1 scheduler/s-2"},
		{filter, "scheduler/s-1"}, // default-scheduler
	} {
		ts, next := Targets(tt.p, nodes, leases, now)
		var got []string
		for _, x := range ts {
			got = append(got, x.Component+"/"+x.Name)
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("%s: targets %v, want %s", tt.p.Spec.Hook, got, tt.want)
		}
		if tt.p == validate && !next.Equal(now.Add(30*time.Second)) {
			t.Errorf("next recheck %v, want when api-1's Lease runs out", next)
		}
	}
}

func TestPlan(t *testing.T) {
	dx, dy, dz := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64), "sha256:"+strings.Repeat("c", 64)
	now := time.Date(2026, 12, 6, 4, 0, 0, 0, time.UTC)
	p := &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 2},
		Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookKubeletProbe}, Status: policyv1alpha1.WasmPolicyStatus{Digest: dx}}
	k := func(n string) Target { return Target{Component: "kubelet", Name: n} }
	targets := []Target{k("a"), k("b"), k("c"), k("d")}
	reports := map[Target]policyv1alpha1.ComponentStatus{
		k("a"):    {Name: "a", Component: "kubelet", ObservedGeneration: 2, Phase: policyv1alpha1.PhaseActive},
		k("b"):    {Name: "b", Component: "kubelet", ObservedGeneration: 1, Phase: policyv1alpha1.PhaseActive}, // the previous generation
		k("c"):    {Name: "c", Component: "kubelet", ObservedGeneration: 2, Phase: policyv1alpha1.PhaseFailed, Reason: "LoadFailed", Message: "no wasmkube_probe"},
		k("gone"): {Name: "gone", Component: "kubelet", ObservedGeneration: 2, Phase: policyv1alpha1.PhaseActive}, // not a target: not counted
	}
	r := Plan(p, targets, reports, now)
	s := r.Status
	if s.ReadyComponents != 1 || s.TargetedComponents != 4 || s.ObservedGeneration != 2 || s.Digest != dx || len(s.Components) != 4 {
		t.Fatalf("status %+v", s)
	}
	if s.Components[3].Phase != policyv1alpha1.PhasePending || s.Components[3].Reason != ReasonNoReport {
		t.Fatalf("a target without a report: %+v", s.Components[3])
	}
	ready, degraded := meta.FindStatusCondition(s.Conditions, ConditionReady), meta.FindStatusCondition(s.Conditions, ConditionDegraded)
	if ready.Status != metav1.ConditionFalse || ready.Reason != ReasonFailed || !strings.HasPrefix(ready.Message, "1/4 ") {
		t.Fatalf("Ready %+v", ready)
	}
	if degraded.Status != metav1.ConditionTrue || !strings.Contains(degraded.Message, "kubelet c: LoadFailed: no wasmkube_probe") {
		t.Fatalf("Degraded %+v", degraded)
	}
	if len(r.Failures) != 1 || r.Failures[0].Name != "c" {
		t.Fatalf("failures %+v", r.Failures)
	}

	// All active: Ready True, and the conditions' times stay when nothing changes.
	for _, n := range []string{"b", "c", "d"} {
		reports[k(n)] = policyv1alpha1.ComponentStatus{Name: n, Component: "kubelet", ObservedGeneration: 2, Phase: policyv1alpha1.PhaseActive, Digest: dy}
	}
	r0 := reports[k("a")]
	r0.Digest = dz
	reports[k("a")] = r0
	if d := Plan(p, targets, reports, now).Status.Digest; d != dx {
		t.Fatalf("digest %s while the components disagree, want the previous one", d)
	}
	r0.Digest = dy
	reports[k("a")] = r0
	p.Status = Plan(p, targets, reports, now).Status
	if p.Status.Digest != dy {
		t.Fatalf("digest %s, want the one every component runs", p.Status.Digest)
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, ConditionReady); c.Status != metav1.ConditionTrue || c.Message != "4/4 components have generation 2 active" {
		t.Fatalf("Ready %+v", c)
	}
	again := Plan(p, targets, reports, now.Add(time.Hour)).Status
	if !again.Conditions[0].LastTransitionTime.Equal(&p.Status.Conditions[0].LastTransitionTime) {
		t.Fatal("an unchanged condition got a new transition time")
	}

	// No live component: Ready False, 0/0.
	none := Plan(p, nil, reports, now).Status
	if c := meta.FindStatusCondition(none.Conditions, ConditionReady); c.Reason != ReasonNoComponents || none.TargetedComponents != 0 {
		t.Fatalf("Ready %+v", c)
	}
}

func TestPlanRevisions(t *testing.T) {
	p := &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u1"}}
	spec := func(img string) []byte {
		d, err := RevisionData(&policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate, Module: policyv1alpha1.ModuleSource{Image: img}, Revision: ptr.To[int64](3)})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	var revs []*appsv1.ControllerRevision
	keep := func(img string) RevisionPlan {
		plan := PlanRevisions(p, revs, spec(img))
		var kept []*appsv1.ControllerRevision
		for _, r := range revs {
			pruned := false
			for _, x := range plan.Prune {
				pruned = pruned || x.Name == r.Name
			}
			if !pruned && r.Name != plan.Current.Name {
				kept = append(kept, r)
			}
		}
		revs = append(kept, plan.Current)
		return plan
	}
	if pl := keep("r.io/m:v1"); !pl.New || pl.Current.Revision != 1 || pl.Current.Labels[PolicyUIDLabel] != "u1" || len(pl.Current.OwnerReferences) != 1 {
		t.Fatalf("first revision %+v", pl)
	}
	if s, err := RevisionSpec(revs[0]); err != nil || s.Revision != nil || s.Module.Image != "r.io/m:v1" {
		t.Fatalf("revision spec %+v %v (spec.revision is not part of a revision)", s, err)
	}
	if pl := keep("r.io/m:v1"); pl.New || pl.Renumber || pl.Current.Revision != 1 {
		t.Fatalf("an unchanged spec: %+v", pl)
	}
	keep("r.io/m:v2")
	if pl := keep("r.io/m:v1"); pl.New || !pl.Renumber || pl.Current.Revision != 3 {
		t.Fatalf("back to v1: %+v, want v1 renumbered 3", pl)
	}
	for i := 0; i < 15; i++ {
		keep("r.io/m:x" + string(rune('a'+i)))
	}
	if len(revs) != HistoryLimit {
		t.Fatalf("%d revisions kept, want %d", len(revs), HistoryLimit)
	}
	if FindRevision(revs, 18) == nil || FindRevision(revs, 8) != nil {
		t.Fatal("the newest ten must be kept")
	}
}

// A report is collected once its component is gone for good: a deleted Node, an API server
// or scheduler without an identity Lease, or whose Lease ran out more than OrphanGrace ago;
// a young report (its component's Lease not written yet) and a live or lately expired Lease
// keep theirs.
func TestOrphans(t *testing.T) {
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	nodes := []*corev1.Node{node("a", false, nil)} // NotReady is not gone
	leases := []*coordinationv1.Lease{
		lease("scheduler", "s-live", now, "default-scheduler"),
		lease("scheduler", "s-lately", now.Add(-2*time.Minute), "default-scheduler"), // ran out 80 s ago
		lease("apiserver", "api-long", now.Add(-10*time.Minute), ""),                 // ran out 9 min 20 s ago
	}
	ref := func(name, comp, inst string, created time.Time) ReportRef {
		return ReportRef{Name: name, Target: Target{Component: comp, Name: inst}, Created: created}
	}
	reports := []ReportRef{
		ref("p.kubelet.a", "kubelet", "a", old),
		ref("p.kubelet.gone", "kubelet", "gone", old),
		ref("p.scheduler.s-live", "scheduler", "s-live", old),
		ref("p.scheduler.s-lately", "scheduler", "s-lately", old),
		ref("p.apiserver.api-long", "apiserver", "api-long", old),
		ref("p.scheduler.restarted", "scheduler", "s-old", old),
		ref("p.apiserver.starting", "apiserver", "api-new", now.Add(-time.Minute)),
	}
	got, next := Orphans(reports, nodes, leases, now)
	if want := "p.apiserver.api-long p.kubelet.gone p.scheduler.restarted"; strings.Join(got, " ") != want {
		t.Errorf("orphans %v, want %s", got, want)
	}
	// the earliest of: s-lately's Lease ran out at -80 s (+5 min), api-new's report at -1 min (+5 min)
	if want := now.Add(-80 * time.Second).Add(OrphanGrace); !next.Equal(want) {
		t.Errorf("next %v, want %v", next, want)
	}
}
