package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func i32(v int32) *int32 { return &v }

func dep(replicas int32, surge, unavail intstr.IntOrString) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavail}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}},
		},
	}
}

func rs(name string, spec, actual, available int32, created time.Time) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &spec},
		Status: appsv1.ReplicaSetStatus{Replicas: actual, ReadyReplicas: available, AvailableReplicas: available}}
}

func TestResolveFenceposts(t *testing.T) {
	cases := []struct {
		surge, unavail intstr.IntOrString
		desired        int32
		ws, wu         int32
	}{
		{intstr.FromString("25%"), intstr.FromString("25%"), 10, 3, 2},
		{intstr.FromInt32(0), intstr.FromInt32(0), 5, 0, 1},
		{intstr.FromString("25%"), intstr.FromString("25%"), 3, 1, 0},
		{intstr.FromInt32(2), intstr.FromString("50%"), 5, 2, 2},
	}
	for _, c := range cases {
		s, u, err := ResolveFenceposts(&c.surge, &c.unavail, c.desired)
		if err != nil || s != c.ws || u != c.wu {
			t.Errorf("ResolveFenceposts(%v,%v,%d) = %d,%d,%v want %d,%d", c.surge.String(), c.unavail.String(), c.desired, s, u, err, c.ws, c.wu)
		}
	}
	bad := intstr.FromString("ten")
	if _, _, err := ResolveFenceposts(&bad, nil, 3); err == nil {
		t.Error("malformed maxSurge accepted")
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	t0 := time.Unix(0, 0)
	d := dep(10, intstr.FromInt32(3), intstr.FromInt32(2))
	cases := []struct {
		name    string
		old, nw *appsv1.ReplicaSet
		want    int32
	}{
		{"start of rollout: surge 3", rs("old", 10, 10, 10, t0), rs("new", 0, 0, 0, t0), 3},
		{"at surge limit", rs("old", 10, 10, 10, t0), rs("new", 3, 3, 0, t0), 3},
		{"old shrank, new may grow", rs("old", 7, 7, 7, t0), rs("new", 3, 3, 3, t0), 6},
		{"old pods not yet gone count", rs("old", 7, 10, 7, t0), rs("new", 3, 3, 3, t0), 3},
		{"never beyond desired", rs("old", 0, 0, 0, t0), rs("new", 9, 9, 9, t0), 10},
	}
	for _, c := range cases {
		if got := NewRSNewReplicas(d, []*appsv1.ReplicaSet{c.old, c.nw}, c.nw); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
	rec := dep(10, intstr.FromInt32(3), intstr.FromInt32(2))
	rec.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	if got := NewRSNewReplicas(rec, nil, rs("new", 0, 0, 0, t0)); got != 10 {
		t.Errorf("recreate: %d", got)
	}
}

func TestOldScaleDownBudget(t *testing.T) {
	t0 := time.Unix(0, 0)
	d := dep(10, intstr.FromInt32(3), intstr.FromInt32(2)) // min available 8
	old, nw := rs("old", 10, 10, 10, t0), rs("new", 3, 3, 0, t0)
	if got := OldScaleDownBudget(d, []*appsv1.ReplicaSet{old, nw}, nw); got != 2 {
		t.Errorf("new pods unavailable: budget %d, want 2", got)
	}
	nw.Status.AvailableReplicas = 3
	if got := OldScaleDownBudget(d, []*appsv1.ReplicaSet{old, nw}, nw); got != 5 {
		t.Errorf("new pods available: budget %d, want 5", got)
	}
}

func TestProportional(t *testing.T) {
	t0 := time.Unix(0, 0)
	// Mid-rollout 10 -> 20 replicas, surge 3: allowed 13 -> 23 pods.
	d := dep(20, intstr.FromInt32(3), intstr.FromInt32(2))
	a, b := rs("old", 8, 8, 8, t0), rs("new", 5, 5, 5, t0.Add(time.Second))
	for _, r := range []*appsv1.ReplicaSet{a, b} {
		r.Annotations = map[string]string{MaxReplicasAnnotation: "13"}
	}
	got := Proportional(d, []*appsv1.ReplicaSet{a, b})
	if got["old"]+got["new"] != 23 {
		t.Fatalf("sizes %v do not add up to 23", got)
	}
	if got["old"] <= 8 || got["new"] <= 5 || got["old"] < got["new"] {
		t.Fatalf("sizes %v not proportional", got)
	}
	// Scale to zero: everything goes.
	d0 := dep(0, intstr.FromInt32(3), intstr.FromInt32(2))
	got = Proportional(d0, []*appsv1.ReplicaSet{a, b})
	if got["old"] != 0 || got["new"] != 0 {
		t.Fatalf("scale to 0: %v", got)
	}
}

func TestHashAndTemplates(t *testing.T) {
	d := dep(1, intstr.FromInt32(1), intstr.FromInt32(0))
	h1 := ComputeHash(&d.Spec.Template, nil)
	if h1 != ComputeHash(d.Spec.Template.DeepCopy(), nil) {
		t.Fatal("hash not stable")
	}
	if h1 == ComputeHash(&d.Spec.Template, i32(1)) {
		t.Fatal("collisionCount does not change the hash")
	}
	other := d.Spec.Template.DeepCopy()
	other.Spec.Containers[0].Image = "busybox:2"
	if h1 == ComputeHash(other, nil) {
		t.Fatal("different templates hash alike")
	}
	labelled := d.Spec.Template.DeepCopy()
	labelled.Labels[PodTemplateHashLabel] = h1
	if !EqualIgnoreHash(labelled, &d.Spec.Template) || EqualIgnoreHash(other, &d.Spec.Template) {
		t.Fatal("EqualIgnoreHash")
	}
}

func TestRolloutStatus(t *testing.T) {
	now := time.Unix(10_000, 0)
	d := dep(3, intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.ProgressDeadlineSeconds = i32(60)
	old, nw := rs("old", 1, 1, 1, now), rs("new", 3, 3, 2, now)
	st, after := RolloutStatus(d, []*appsv1.ReplicaSet{old, nw}, nw, now)
	if st.Replicas != 4 || st.UpdatedReplicas != 3 || st.AvailableReplicas != 3 || st.ObservedGeneration != 1 {
		t.Fatalf("counts: %+v", st)
	}
	p := GetCondition(st, appsv1.DeploymentProgressing)
	if p == nil || p.Reason != ReasonRSUpdated || after <= 0 {
		t.Fatalf("progressing = %+v after %v", p, after)
	}
	if a := GetCondition(st, appsv1.DeploymentAvailable); a == nil || a.Status != corev1.ConditionTrue {
		t.Fatalf("available = %+v", a)
	}
	// No progress past the deadline: timed out.
	d.Status = st
	st2, _ := RolloutStatus(d, []*appsv1.ReplicaSet{old, nw}, nw, now.Add(2*time.Minute))
	if p := GetCondition(st2, appsv1.DeploymentProgressing); p.Reason != ReasonTimedOut || p.Status != corev1.ConditionFalse {
		t.Fatalf("not timed out: %+v", p)
	}
	// Complete.
	d.Status = st
	old.Status = appsv1.ReplicaSetStatus{}
	*old.Spec.Replicas = 0
	nw.Status.AvailableReplicas = 3
	st3, after := RolloutStatus(d, []*appsv1.ReplicaSet{old, nw}, nw, now)
	if p := GetCondition(st3, appsv1.DeploymentProgressing); p.Reason != ReasonNewRSAvailable || after != 0 || !Complete(d, &st3) {
		t.Fatalf("complete: %+v, after %v", p, after)
	}
	// Unavailable below the minimum.
	nw.Status.AvailableReplicas = 2
	st4 := CalculateStatus(d, []*appsv1.ReplicaSet{old, nw}, nw, now)
	if a := GetCondition(st4, appsv1.DeploymentAvailable); a.Status != corev1.ConditionFalse {
		t.Fatalf("available with 2 of 3 and maxUnavailable 0: %+v", a)
	}
}

func TestReplicaFailureSurfaces(t *testing.T) {
	now := time.Unix(10_000, 0)
	d := dep(2, intstr.FromInt32(1), intstr.FromInt32(0))
	nw := rs("new", 2, 0, 0, now)
	nw.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "denied by policy"}}
	st := CalculateStatus(d, []*appsv1.ReplicaSet{nw}, nw, now)
	c := GetCondition(st, appsv1.DeploymentReplicaFailure)
	if c == nil || c.Reason != "FailedCreate" || c.Message != "denied by policy" {
		t.Fatalf("ReplicaFailure = %+v", c)
	}
	d.Status = st
	nw.Status.Conditions = nil
	if c := GetCondition(CalculateStatus(d, []*appsv1.ReplicaSet{nw}, nw, now), appsv1.DeploymentReplicaFailure); c != nil {
		t.Fatalf("ReplicaFailure not cleared: %+v", c)
	}
}
