package wasmpolicy

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

func TestPlacementSelects(t *testing.T) {
	wp := func(hook policyv1alpha1.Hook, edit func(*policyv1alpha1.WasmPolicySpec)) *policyv1alpha1.WasmPolicy {
		p := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: hook}}
		if edit != nil {
			edit(&p.Spec)
		}
		return p
	}
	zoneA := func(s *policyv1alpha1.WasmPolicySpec) {
		s.Kubelet = &policyv1alpha1.KubeletHook{HookName: "h", NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}}
	}
	other := func(s *policyv1alpha1.WasmPolicySpec) {
		s.Scheduler = &policyv1alpha1.SchedulerHook{SchedulerName: "other"}
	}
	api := Placement{Component: ComponentAPIServer}
	sched := Placement{Component: ComponentScheduler, SchedulerNames: []string{"default-scheduler"}}
	nodeA := Placement{Component: ComponentKubelet, NodeLabels: map[string]string{"zone": "a"}}
	nodeB := Placement{Component: ComponentKubelet, NodeLabels: map[string]string{"zone": "b"}}
	unknownNode := Placement{Component: ComponentKubelet}
	for _, c := range []struct {
		name string
		pl   Placement
		p    *policyv1alpha1.WasmPolicy
		want bool
	}{
		{"validate on an API server", api, wp(policyv1alpha1.HookAdmissionValidate, nil), true},
		{"mutate on an API server", api, wp(policyv1alpha1.HookAdmissionMutate, nil), true},
		{"score on an API server", api, wp(policyv1alpha1.HookSchedulerScore, nil), false},
		{"score, default profile", sched, wp(policyv1alpha1.HookSchedulerScore, nil), true},
		{"score, another profile", sched, wp(policyv1alpha1.HookSchedulerScore, other), false},
		{"validate on a scheduler", sched, wp(policyv1alpha1.HookAdmissionValidate, nil), false},
		{"probe, no nodeSelector", nodeB, wp(policyv1alpha1.HookKubeletProbe, nil), true},
		{"probe, matching node", nodeA, wp(policyv1alpha1.HookKubeletProbe, zoneA), true},
		{"probe, other node", nodeB, wp(policyv1alpha1.HookKubeletProbe, zoneA), false},
		{"probe, Node not read yet", unknownNode, wp(policyv1alpha1.HookKubeletProbe, nil), false},
		{"preStop on a scheduler", sched, wp(policyv1alpha1.HookKubeletPreStop, nil), false},
	} {
		if got := c.pl.Selects(c.p); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
