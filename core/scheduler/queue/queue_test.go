package queue

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newQ() (*Queue, *clock) {
	c := &clock{t: time.Unix(1000, 0)}
	return New(Options{Now: c.now}), c
}

func pod(name string, prio int32) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}, Spec: v1.PodSpec{Priority: &prio}}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		attempts int
		want     time.Duration
	}{{1, time.Second}, {2, 2 * time.Second}, {3, 4 * time.Second}, {4, 8 * time.Second}, {5, 10 * time.Second}, {20, 10 * time.Second}} {
		if got := Backoff(tc.attempts, time.Second, 10*time.Second); got != tc.want {
			t.Errorf("Backoff(%d) = %v, want %v", tc.attempts, got, tc.want)
		}
	}
}

func TestPopOrderPriorityThenTime(t *testing.T) {
	q, c := newQ()
	q.Add(pod("low-old", 1))
	c.advance(time.Second)
	q.Add(pod("high", 10))
	c.advance(time.Second)
	q.Add(pod("low-new", 1))
	q.Add(pod("mid", 5))
	var got []string
	for range 4 {
		got = append(got, q.Pop().Pod.Name)
	}
	want := []string{"high", "mid", "low-old", "low-new"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pop order %v, want %v", got, want)
		}
	}
}

func TestUnschedulableWaitsForEventThenBacksOff(t *testing.T) {
	q, c := newQ()
	q.Add(pod("p", 0))
	qp := q.Pop()
	q.AddUnschedulable(qp, true)
	if w := q.Where("p"); w != "unschedulable" {
		t.Fatalf("after an unschedulable attempt the pod is in %q", w)
	}
	q.FlushBackoffCompleted()
	if a, _, _ := q.Lens(); a != 0 {
		t.Fatal("unschedulable pod became active without an event")
	}
	// An event during back-off: to backoffQ, then active once 1 s passed.
	q.MoveAllToActiveOrBackoff(nil)
	if w := q.Where("p"); w != "backoff" {
		t.Fatalf("moved during back-off into %q, want backoff", w)
	}
	c.advance(999 * time.Millisecond)
	q.FlushBackoffCompleted()
	if w := q.Where("p"); w != "backoff" {
		t.Fatalf("left back-off early: %q", w)
	}
	c.advance(time.Millisecond)
	q.FlushBackoffCompleted()
	if w := q.Where("p"); w != "active" {
		t.Fatalf("after back-off: %q, want active", w)
	}
	// Second failure: 2 s back-off.
	qp = q.Pop()
	q.AddUnschedulable(qp, false) // an error goes straight to backoffQ
	c.advance(1500 * time.Millisecond)
	q.FlushBackoffCompleted()
	if w := q.Where("p"); w != "backoff" {
		t.Fatalf("second back-off ended too early: %q", w)
	}
	c.advance(500 * time.Millisecond)
	q.FlushBackoffCompleted()
	if w := q.Where("p"); w != "active" {
		t.Fatalf("second back-off: %q, want active", w)
	}
}

func TestOlderPodsFirstWithinAPriority(t *testing.T) {
	q, _ := newQ()
	young, old := pod("young", 0), pod("old", 0)
	young.CreationTimestamp = metav1.Unix(2000, 0)
	old.CreationTimestamp = metav1.Unix(1000, 0)
	q.Add(young) // enters the queue first, but was created later
	q.Add(old)
	if got := q.Pop().Pod.Name; got != "old" {
		t.Fatalf("popped %s first, want the older pod", got)
	}
}

func TestMoveDuringCycleGoesToBackoff(t *testing.T) {
	q, _ := newQ()
	q.Add(pod("p", 0))
	qp := q.Pop()
	// A node was added while p was being scheduled: the event must not be lost.
	q.MoveAllToActiveOrBackoff(nil)
	q.AddUnschedulable(qp, true)
	if w := q.Where("p"); w != "backoff" {
		t.Fatalf("pod failed during a move: in %q, want backoff", w)
	}
}

func TestLeftoverFlushAfterFiveMinutes(t *testing.T) {
	q, c := newQ()
	q.Add(pod("p", 0))
	q.AddUnschedulable(q.Pop(), true)
	c.advance(4 * time.Minute)
	q.FlushUnschedulableLeftover()
	if w := q.Where("p"); w != "unschedulable" {
		t.Fatalf("flushed too early: %q", w)
	}
	c.advance(time.Minute)
	q.FlushUnschedulableLeftover()
	if w := q.Where("p"); w != "active" {
		t.Fatalf("after 5 minutes: %q, want active", w)
	}
}

func TestFilteredMoveAndDelete(t *testing.T) {
	q, _ := newQ()
	for _, n := range []string{"a", "b"} {
		q.Add(pod(n, 0))
	}
	a, b := q.Pop(), q.Pop()
	a.UnschedulablePlugins = map[string]struct{}{"InterPodAffinity": {}}
	q.AddUnschedulable(a, true)
	q.AddUnschedulable(b, true)
	q.MoveAllToActiveOrBackoff(func(qp *QueuedPodInfo) bool { _, ok := qp.UnschedulablePlugins["InterPodAffinity"]; return ok })
	if q.Where("a") != "backoff" || q.Where("b") != "unschedulable" {
		t.Fatalf("filtered move: a in %q, b in %q", q.Where("a"), q.Where("b"))
	}
	q.Delete(pod("b", 0))
	if q.Where("b") != "" {
		t.Fatal("deleted pod still queued")
	}
	// A pod deleted while in flight is dropped when it comes back.
	q.Add(pod("c", 0))
	qc := q.Pop()
	q.Delete(pod("c", 0))
	q.AddUnschedulable(qc, true)
	if q.Where("c") != "" {
		t.Fatal("pod deleted in flight came back")
	}
}

func TestNominated(t *testing.T) {
	q, _ := newQ()
	p := pod("p", 100)
	q.AddNominated(p, "n1")
	if got := q.NominatedPodsForNode("n1"); len(got) != 1 || got[0].Pod.Name != "p" {
		t.Fatalf("nominated on n1: %v", got)
	}
	q.AddNominated(p, "n2")
	if len(q.NominatedPodsForNode("n1")) != 0 || len(q.NominatedPodsForNode("n2")) != 1 {
		t.Fatal("re-nomination did not move the pod")
	}
	q.Delete(p)
	if len(q.NominatedPodsForNode("n2")) != 0 {
		t.Fatal("deleted pod still nominated")
	}
	// A pod nominated through its status (as read from the API), and a second one:
	// forgetting one leaves the other visible.
	a, b := pod("a", 0), pod("b", 0)
	a.Status.NominatedNodeName = "n3"
	q.Add(a)
	q.AddNominated(b, "n4")
	if len(q.NominatedPodsForNode("n3")) != 1 || len(q.NominatedPodsForNode("n4")) != 1 {
		t.Fatalf("nominated through status / AddNominated: n3 %d, n4 %d pods, want 1 and 1",
			len(q.NominatedPodsForNode("n3")), len(q.NominatedPodsForNode("n4")))
	}
	q.DeleteNominated(b)
	if len(q.NominatedPodsForNode("n3")) != 1 || len(q.NominatedPodsForNode("n4")) != 0 {
		t.Fatal("forgetting one nomination changed the other")
	}
	q.Delete(a)
	if len(q.NominatedPodsForNode("n3")) != 0 {
		t.Fatal("deleted pod still nominated")
	}
}

// PopContext returns nil when its ctx ends and leaves the queue open: a scheduler that
// lost its leadership stops popping, and its next term pops the pods still queued.
func TestPopContextEndsWithoutClosing(t *testing.T) {
	q, _ := newQ()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan *QueuedPodInfo, 1)
	go func() { got <- q.PopContext(ctx) }()
	cancel()
	select {
	case qp := <-got:
		if qp != nil {
			t.Fatalf("PopContext after cancel = %s, want nil", qp.Key())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("PopContext did not return when its ctx ended")
	}
	if qp := q.PopContext(ctx); qp != nil {
		t.Fatalf("PopContext on an ended ctx = %s, want nil", qp.Key())
	}
	q.Add(pod("waiting", 0))
	if qp := q.PopContext(context.Background()); qp == nil || qp.Pod.Name != "waiting" {
		t.Fatalf("the next term popped %v, want the queued pod", qp)
	}
	q.Close()
	if qp := q.PopContext(context.Background()); qp != nil {
		t.Fatal("PopContext on a closed queue returned a pod")
	}
}
