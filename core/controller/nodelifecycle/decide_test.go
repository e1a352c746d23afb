package nodelifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Unix(50_000, 0)

func secs(s int64) *int64 { return &s }

func TestDecide(t *testing.T) {
	added := metav1.NewTime(t0)
	unreachable := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	custom := corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute, TimeAdded: &added}
	noSched := corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule}
	tol := func(key string, s *int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: s}
	}
	cases := []struct {
		name   string
		tols   []corev1.Toleration
		taints []corev1.Taint
		now    time.Time
		def    int64
		want   Eviction
	}{
		{"no taints", nil, nil, t0, 300, Eviction{}},
		{"NoSchedule only", nil, []corev1.Taint{noSched}, t0, 300, Eviction{}},
		{"untolerated custom taint evicts now", nil, []corev1.Taint{custom}, t0, 300, Eviction{Now: true}},
		{"tolerated 30s, 10s in", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, secs(30))}, []corev1.Taint{unreachable}, t0.Add(10 * time.Second), 300, Eviction{After: 20 * time.Second}},
		{"tolerated 30s, 30s in", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, secs(30))}, []corev1.Taint{unreachable}, t0.Add(30 * time.Second), 300, Eviction{Now: true}},
		{"tolerated forever", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, []corev1.Taint{unreachable}, t0.Add(time.Hour), 300, Eviction{}},
		{"shortest toleration wins", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, secs(100)), tol("", secs(5))}, []corev1.Taint{unreachable}, t0, 300, Eviction{After: 5 * time.Second}},
		{"no toleration: default seconds", nil, []corev1.Taint{unreachable}, t0.Add(100 * time.Second), 300, Eviction{After: 200 * time.Second}},
		{"no toleration, default disabled", nil, []corev1.Taint{unreachable}, t0, -1, Eviction{Now: true}},
		{"one of two taints untolerated", []corev1.Toleration{tol(corev1.TaintNodeUnreachable, nil)}, []corev1.Taint{unreachable, custom}, t0, 300, Eviction{Now: true}},
	}
	for _, c := range cases {
		p := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: c.tols}}
		if got := Decide(p, c.taints, c.def, c.now); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestReconcileTaints(t *testing.T) {
	other := corev1.Taint{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}
	// Unknown node: both unreachable taints added, other kept.
	got, changed := ReconcileTaints([]corev1.Taint{other}, WantedTaintKey(nil), t0)
	if !changed || len(got) != 3 || got[0] != other {
		t.Fatalf("add: %v %v", got, changed)
	}
	for _, tt := range got[1:] {
		if tt.Key != corev1.TaintNodeUnreachable {
			t.Fatalf("wrong key %v", tt)
		}
		if tt.Effect == corev1.TaintEffectNoExecute && (tt.TimeAdded == nil || !tt.TimeAdded.Time.Equal(t0)) {
			t.Fatalf("NoExecute without timeAdded: %v", tt)
		}
	}
	// Again later: unchanged, timeAdded kept.
	again, changed := ReconcileTaints(got, corev1.TaintNodeUnreachable, t0.Add(time.Minute))
	if changed || len(again) != 3 {
		t.Fatalf("idempotence: %v %v", again, changed)
	}
	// Kubelet says Ready=False: swap to not-ready.
	nr, changed := ReconcileTaints(got, WantedTaintKey(&corev1.NodeCondition{Status: corev1.ConditionFalse}), t0)
	if !changed || len(nr) != 3 || nr[1].Key != corev1.TaintNodeNotReady {
		t.Fatalf("not-ready: %v", nr)
	}
	// Ready again: only the unmanaged taint stays.
	ok, changed := ReconcileTaints(nr, WantedTaintKey(&corev1.NodeCondition{Status: corev1.ConditionTrue}), t0)
	if !changed || len(ok) != 1 || ok[0] != other {
		t.Fatalf("recovery: %v", ok)
	}
}

func TestUnknownConditions(t *testing.T) {
	hb := metav1.NewTime(t0.Add(-time.Hour))
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: hb},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
	}
	out, changed := UnknownConditions(conds, t0)
	if !changed || len(out) != 2 {
		t.Fatalf("%v %v", out, changed)
	}
	for _, c := range out {
		if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || !c.LastTransitionTime.Time.Equal(t0) {
			t.Fatalf("condition %v", c)
		}
	}
	if !out[0].LastHeartbeatTime.Equal(&hb) {
		t.Fatal("heartbeat time changed")
	}
	if _, changed := UnknownConditions(out, t0.Add(time.Minute)); changed {
		t.Fatal("second pass changed conditions")
	}
	if out, changed := UnknownConditions(nil, t0); !changed || len(out) != 1 || out[0].Type != corev1.NodeReady {
		t.Fatalf("missing Ready: %v", out)
	}
	if conds[0].Status != corev1.ConditionTrue {
		t.Fatal("input modified")
	}
}
