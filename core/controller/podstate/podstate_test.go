package podstate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var t0 = time.Unix(1_000_000, 0)

func pod(name string, node string, phase corev1.PodPhase, readySince *time.Time, created time.Time) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if readySince != nil {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*readySince)}}
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestForDeletionOrder(t *testing.T) {
	pods := []*corev1.Pod{
		pod("ready-old", "n1", corev1.PodRunning, ptr(t0), t0),
		pod("ready-new", "n1", corev1.PodRunning, ptr(t0.Add(time.Minute)), t0),
		pod("running-notready", "n1", corev1.PodRunning, nil, t0),
		pod("pending", "n1", corev1.PodPending, nil, t0),
		pod("unscheduled", "", corev1.PodPending, nil, t0),
	}
	got := ForDeletion(pods, 5)
	want := []string{"unscheduled", "pending", "running-notready", "ready-new", "ready-old"}
	for i, p := range got {
		if p.Name != want[i] {
			t.Fatalf("order[%d] = %s, want %s (all: %v)", i, p.Name, want[i], names(got))
		}
	}
	if n := len(ForDeletion(pods, 2)); n != 2 {
		t.Fatalf("ForDeletion(2) returned %d", n)
	}
	if pods[0].Name != "ready-old" {
		t.Fatal("input was reordered")
	}
	// Equal otherwise: the newest pod goes first.
	a := pod("a", "n", corev1.PodPending, nil, t0)
	b := pod("b", "n", corev1.PodPending, nil, t0.Add(time.Second))
	if got := ForDeletion([]*corev1.Pod{a, b}, 1); got[0].Name != "b" {
		t.Fatalf("newest not first: %s", got[0].Name)
	}
}

func names(ps []*corev1.Pod) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Name)
	}
	return s
}

func TestAvailable(t *testing.T) {
	p := pod("p", "n", corev1.PodRunning, ptr(t0), t0)
	cases := []struct {
		minReady int32
		now      time.Time
		want     bool
		in       time.Duration
	}{
		{0, t0, true, 0},
		{10, t0.Add(5 * time.Second), false, 5 * time.Second},
		{10, t0.Add(10 * time.Second), true, 0},
	}
	for _, c := range cases {
		if got := IsAvailable(p, c.minReady, c.now); got != c.want {
			t.Errorf("IsAvailable(min=%d, now=%v) = %v", c.minReady, c.now, got)
		}
		if got := AvailableIn(p, c.minReady, c.now); got != c.in {
			t.Errorf("AvailableIn(min=%d) = %v, want %v", c.minReady, got, c.in)
		}
	}
	if IsAvailable(pod("q", "n", corev1.PodRunning, nil, t0), 0, t0) {
		t.Error("not-ready pod available")
	}
}

func TestDecide(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"app": "x"})
	owner := metav1.ObjectMeta{Name: "rs", UID: "u1"}
	other := ControllerRef(&metav1.ObjectMeta{Name: "o", UID: "u2"}, "apps/v1", "ReplicaSet")
	mine := ControllerRef(&owner, "apps/v1", "ReplicaSet")
	now := metav1.Now()
	cases := []struct {
		name     string
		obj      metav1.ObjectMeta
		deleting bool
		want     Claim
	}{
		{"owned", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, OwnerReferences: []metav1.OwnerReference{mine}}, false, Owned},
		{"release", metav1.ObjectMeta{Labels: map[string]string{"app": "y"}, OwnerReferences: []metav1.OwnerReference{mine}}, false, Release},
		{"owned while owner deleting", metav1.ObjectMeta{Labels: map[string]string{"app": "y"}, OwnerReferences: []metav1.OwnerReference{mine}}, true, Owned},
		{"adopt orphan", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, false, Adopt},
		{"deleting owner adopts nothing", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}, true, Ignore},
		{"deleting orphan not adopted", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, DeletionTimestamp: &now}, false, Ignore},
		{"other controller", metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, OwnerReferences: []metav1.OwnerReference{other}}, false, Ignore},
		{"no match", metav1.ObjectMeta{Labels: map[string]string{"app": "y"}}, false, Ignore},
	}
	for _, c := range cases {
		if got := Decide(&c.obj, owner.UID, c.deleting, sel); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
