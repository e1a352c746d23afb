package daemonset

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestShouldRun(t *testing.T) {
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"disk": "ssd"},
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
	}}}}
	node := func(labels map[string]string, unschedulable bool, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}, Spec: corev1.NodeSpec{Taints: taints, Unschedulable: unschedulable}}
	}
	ssd := map[string]string{"disk": "ssd"}
	for _, c := range []struct {
		name      string
		node      *corev1.Node
		run, keep bool
	}{
		{"matching", node(ssd, false), true, true},
		{"selector mismatch", node(map[string]string{"disk": "hdd"}, false), false, false},
		{"tolerated taint", node(ssd, false, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule}), true, true},
		{"NoSchedule taint keeps running pods", node(ssd, false, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule}), false, true},
		{"NoExecute taint evicts", node(ssd, false, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoExecute}), false, false},
		{"PreferNoSchedule is ignored", node(ssd, false, corev1.Taint{Key: "x", Effect: corev1.TaintEffectPreferNoSchedule}), true, true},
		{"unschedulable taint is tolerated", node(ssd, true, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), true, true},
		{"not-ready is tolerated", node(ssd, false, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), true, true},
	} {
		if run, keep := ShouldRun(ds, c.node); run != c.run || keep != c.keep {
			t.Errorf("%s: ShouldRun = %v, %v; want %v, %v", c.name, run, keep, c.run, c.keep)
		}
	}
}

func readyPod(name, node, hash string) *corev1.Pod {
	now := metav1.NewTime(time.Now().Add(-time.Minute))
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Labels: map[string]string{RevisionLabel: hash}},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now}}},
	}
}

// A rolling update deletes old pods only within maxUnavailable, and a node without a pod
// counts against it.
func TestPlanRollingUpdate(t *testing.T) {
	mu := intstr.FromInt32(2)
	ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
		Type: appsv1.RollingUpdateDaemonSetStrategyType, RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu}}}}
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for _, n := range []string{"a", "b", "c", "d"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		if n != "d" {
			pods = append(pods, readyPod("p-"+n, n, "old"))
		}
	}
	d := Plan(ds, nodes, pods, "new", time.Now())
	if len(d.CreateOn) != 1 || d.CreateOn[0] != "d" || len(d.Delete) != 1 || d.Delete[0].Name != "p-a" {
		t.Fatalf("create on %v, delete %d", d.CreateOn, len(d.Delete))
	}
	if d.Status.DesiredNumberScheduled != 4 || d.Status.CurrentNumberScheduled != 3 || d.Status.UpdatedNumberScheduled != 0 || d.Status.NumberAvailable != 3 {
		t.Errorf("status %+v", d.Status)
	}
	// A vanished node's pod goes.
	d = Plan(ds, nodes[:1], []*corev1.Pod{readyPod("p-a", "a", "new"), readyPod("p-z", "z", "new")}, "new", time.Now())
	if len(d.Delete) != 1 || d.Delete[0].Name != "p-z" {
		t.Errorf("delete %v", d.Delete)
	}
}
