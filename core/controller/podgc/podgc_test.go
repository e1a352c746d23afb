package podgc

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func mk(name, node string, phase corev1.PodPhase, created int64, deleting bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name), CreationTimestamp: metav1.NewTime(time.Unix(created, 0))},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
		p.Finalizers = []string{"test/keep"} // a fake clientset would otherwise drop it at create
	}
	return p
}

func TestDecide(t *testing.T) {
	pods := []*corev1.Pod{
		mk("on-gone-node", "gone", corev1.PodRunning, 1, false),
		mk("on-live-node", "live", corev1.PodRunning, 1, false),
		mk("unscheduled-deleting", "", corev1.PodPending, 1, true),
		mk("unscheduled", "", corev1.PodPending, 1, false),
		mk("done-old", "live", corev1.PodSucceeded, 1, false),
		mk("done-mid", "live", corev1.PodFailed, 2, false),
		mk("done-new", "live", corev1.PodSucceeded, 3, false),
		mk("stuck-on-dead-node", "dead", corev1.PodRunning, 1, true),
		mk("terminating-on-live-node", "live", corev1.PodRunning, 1, true),
	}
	dead := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{
		{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}}}
	live := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "live"}}
	nodes := func(n string) (*corev1.Node, bool) {
		switch n {
		case "dead":
			return dead, true
		case "live":
			return live, true
		}
		return nil, false
	}
	now := time.Now().Add(time.Minute) // after every deletionTimestamp above
	plan := Decide(pods, nodes, 1, now)
	check := func(what string, got []*corev1.Pod, want ...string) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%s: got %d pods, want %v", what, len(got), want)
		}
		for i := range got {
			if got[i].Name != want[i] {
				t.Fatalf("%s[%d] = %s, want %s", what, i, got[i].Name, want[i])
			}
		}
	}
	check("orphaned", plan.Orphaned, "on-gone-node")
	check("unscheduled", plan.Unscheduled, "unscheduled-deleting")
	check("terminated", plan.TerminatedOver, "done-old", "done-mid")
	check("unreachable", plan.Unreachable, "stuck-on-dead-node")
	// Within its grace period the pod is left to its kubelet.
	if p := Decide(pods, nodes, 1, time.Now().Add(-time.Minute)); len(p.Unreachable) != 0 {
		t.Fatal("pod force-deleted before its grace period ended")
	}
	if p := Decide(pods, nodes, -1, now); len(p.TerminatedOver) != 0 {
		t.Fatal("negative threshold must keep all")
	}
}

func TestPassDeletesOrphans(t *testing.T) {
	live := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "live"}}
	client := fake.NewClientset(live, mk("a", "gone", corev1.PodRunning, 1, false), mk("b", "live", corev1.PodRunning, 1, false))
	f := informers.NewSharedInformerFactory(client, 0)
	c := New(client, f, Options{}, nil)
	ctx := context.Background()
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	if n := c.Pass(ctx); n != 1 {
		t.Fatalf("deleted %d, want 1", n)
	}
	pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 || pods.Items[0].Name != "b" {
		t.Fatalf("left %v", pods.Items)
	}
}
