package disruption

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func readyPod(name string, ready bool) *corev1.Pod {
	s := corev1.ConditionFalse
	if ready {
		s = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: s}}}}
}

func TestCompute(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	i := func(v int) *intstr.IntOrString { x := intstr.FromInt32(int32(v)); return &x }
	pct := func(v string) *intstr.IntOrString { x := intstr.FromString(v); return &x }
	three := []*corev1.Pod{readyPod("a", true), readyPod("b", true), readyPod("c", false)}
	cases := []struct {
		name                      string
		spec                      policyv1.PodDisruptionBudgetSpec
		disrupted                 map[string]metav1.Time
		expected                  int32
		healthy, desired, allowed int32
		wantRequeue               bool
	}{
		{name: "minAvailable int", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1)}, expected: 3, healthy: 2, desired: 1, allowed: 1},
		{name: "minAvailable not met", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: i(3)}, expected: 3, healthy: 2, desired: 3, allowed: 0},
		{name: "maxUnavailable of scale 4", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: i(1)}, expected: 4, healthy: 2, desired: 3, allowed: 0},
		{name: "minAvailable 50% rounds up", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: pct("50%")}, expected: 3, healthy: 2, desired: 2, allowed: 0},
		{name: "no pod expected", spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: i(1)}, expected: 0, healthy: 2, desired: 0, allowed: 0},
		{name: "recent eviction not healthy", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1)}, expected: 3,
			disrupted: map[string]metav1.Time{"a": metav1.NewTime(now.Add(-time.Minute))}, healthy: 1, desired: 1, allowed: 0, wantRequeue: true},
		{name: "expired eviction healthy again", spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: i(1)}, expected: 3,
			disrupted: map[string]metav1.Time{"a": metav1.NewTime(now.Add(-3 * time.Minute))}, healthy: 2, desired: 1, allowed: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Generation: 2}, Spec: c.spec,
				Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: c.disrupted}}
			st, requeue := Compute(pdb, three, c.expected, nil, now)
			if st.CurrentHealthy != c.healthy || st.DesiredHealthy != c.desired || st.DisruptionsAllowed != c.allowed || st.ObservedGeneration != 2 {
				t.Errorf("got healthy %d desired %d allowed %d gen %d, want %d %d %d 2", st.CurrentHealthy, st.DesiredHealthy, st.DisruptionsAllowed, st.ObservedGeneration, c.healthy, c.desired, c.allowed)
			}
			if (requeue > 0) != c.wantRequeue {
				t.Errorf("requeue %v, want one: %v", requeue, c.wantRequeue)
			}
			wantCond := metav1.ConditionFalse
			if c.allowed > 0 {
				wantCond = metav1.ConditionTrue
			}
			if len(st.Conditions) != 1 || st.Conditions[0].Status != wantCond {
				t.Errorf("conditions %+v, want DisruptionAllowed %s", st.Conditions, wantCond)
			}
		})
	}
}
