package scheduler_test

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wasmkube/wasmkube/core/scheduler"
)

func inGroup(name string) podOpt {
	return func(p *v1.Pod) { p.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: &name} }
}

func (c *cluster) createPodGroup(name string, minCount int32) {
	c.t.Helper()
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}}}
	if _, err := c.client.SchedulingV1beta1().PodGroups("default").Create(c.ctx, pg, metav1.CreateOptions{}); err != nil {
		c.t.Fatalf("create pod group %s: %v", name, err)
	}
}

// TestGangSchedulingWithPodGroup: a PodGroup whose minCount cannot fit binds nothing (its
// members wait at Permit, then are released together at the timeout), and binds all
// together once a node is added.
func TestGangSchedulingWithPodGroup(t *testing.T) {
	c := newCluster(t, 2) // 4 cpu each: one 3-cpu member per node
	c.startScheduler(scheduler.Options{Config: []byte(`
scheduler:
  profiles:
  - schedulerName: default-scheduler
    pluginConfig:
    - name: GangScheduling
      args: {permitTimeoutSeconds: 1}
`)})
	// The API server validates the group: minCount must be positive.
	bad := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 0}}}}
	if _, err := c.client.SchedulingV1beta1().PodGroups("default").Create(c.ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "spec.schedulingPolicy.gang.minCount") {
		t.Fatalf("a PodGroup with minCount 0: %v, want 422 naming spec.schedulingPolicy.gang.minCount", err)
	}

	c.createPodGroup("train", 3)
	members := []string{"train-0", "train-1", "train-2"}
	for _, m := range members {
		c.createPod(m, requests("3", "1Gi"), inGroup("train"))
	}
	// Two members fit and wait at Permit; the third fits nowhere. At the timeout the
	// waiting members are rejected together, and nothing was bound.
	err := wait.PollUntilContextTimeout(c.ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		for _, m := range members {
			for _, e := range c.events(m, "FailedScheduling") {
				if strings.Contains(e, "rejected due to timeout") {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no member was released at its Permit timeout: %v", err)
	}
	for _, m := range members {
		p, err := c.client.CoreV1().Pods("default").Get(c.ctx, m, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != "" {
			t.Fatalf("pod %s of a group that cannot fit: node %q, err %v; want unbound", m, nodeOf(p), err)
		}
	}
	// Room for the third: the whole group binds.
	c.hollow(c.ctx, 1, "extra-")
	for _, m := range members {
		c.waitPod(m, "bound with its group", func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	}
	// The group's status says so (kubectl's SCHEDULED column).
	err = wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pg, err := c.client.SchedulingV1beta1().PodGroups("default").Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range pg.Status.Conditions {
			if cond.Type == schedulingv1beta1.PodGroupInitiallyScheduled && cond.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("PodGroup train: no %s=True condition: %v", schedulingv1beta1.PodGroupInitiallyScheduled, err)
	}
}

// TestTwoGangsDoNotDeadlock: two groups of two, each fitting alone but not together, with
// members queued interleaved (p1, p3 in group a; p2, p4 in group b) before the scheduler
// starts. The queue takes a group's members one after another (group a's PodGroup is
// older, or its name smaller), so group a binds whole instead of each group holding one
// node at Permit until its 5-minute timeout.
func TestTwoGangsDoNotDeadlock(t *testing.T) {
	c := newCluster(t, 2)
	c.createPodGroup("a", 2)
	c.createPodGroup("b", 2)
	for _, p := range []struct{ name, group string }{{"p1", "a"}, {"p2", "b"}, {"p3", "a"}, {"p4", "b"}} {
		c.createPod(p.name, requests("3", "1Gi"), inGroup(p.group))
	}
	c.startScheduler(scheduler.Options{})
	for _, m := range []string{"p1", "p3"} {
		c.waitPod(m, "bound with group a", func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	}
	for _, m := range []string{"p2", "p4"} {
		if p, err := c.client.CoreV1().Pods("default").Get(c.ctx, m, metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
			t.Fatalf("pod %s of group b: node %q, err %v; want unbound (no room left)", m, nodeOf(p), err)
		}
	}
}

// TestLoweredMinCountCompletesWaitingMembers: two members wait at Permit for a third that
// fits nowhere; lowering the PodGroup's minCount to 2 binds the two at once, without
// waiting for their timeout.
func TestLoweredMinCountCompletesWaitingMembers(t *testing.T) {
	c := newCluster(t, 2)
	s, _ := c.startScheduler(scheduler.Options{})
	c.createPodGroup("g", 3)
	for _, m := range []string{"g-0", "g-1", "g-2"} {
		c.createPod(m, requests("3", "1Gi"), inGroup("g"))
	}
	err := wait.PollUntilContextTimeout(c.ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(s.WaitingPods()) == 2, nil
	})
	if err != nil {
		t.Fatalf("waiting at Permit: %v, want two members", s.WaitingPods())
	}
	patch := []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":2}}}}`)
	if _, err := c.client.SchedulingV1beta1().PodGroups("default").Patch(c.ctx, "g", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	bound := 0
	err = wait.PollUntilContextTimeout(c.ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		bound = 0
		for _, m := range []string{"g-0", "g-1", "g-2"} {
			p, err := c.client.CoreV1().Pods("default").Get(ctx, m, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == 2, nil
	})
	if err != nil {
		t.Fatalf("after minCount 2: %d members bound, want 2: %v", bound, err)
	}
}
