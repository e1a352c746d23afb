package kubelet

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// Repeats of an event are one Event with a count, as upstream's correlator keeps them;
// different messages stay separate; a repeat after its Event is gone creates a new one.
func TestRecorderAggregatesRepeats(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRecorder(srv.Client, "n1", slog.New(slog.DiscardHandler))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}

	// Drive write directly (run only adds the goroutine) so the order is deterministic.
	emit := func(reason, msg string) {
		t.Helper()
		r.event(pod, v1.EventTypeWarning, reason, "app", "%s", msg)
		if err := r.write(ctx, <-r.ch); err != nil {
			t.Fatalf("write %s: %v", reason, err)
		}
	}
	for i := 0; i < 3; i++ {
		emit("Unhealthy", "Readiness probe failed: connection refused")
	}
	emit("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	emit("BackOff", "Back-off restarting failed container app")

	evs, err := srv.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int32{}
	for _, e := range evs.Items {
		counts[e.Reason+"/"+e.Message] += e.Count
		if e.Reason == "Unhealthy" && e.Count == 3 && e.LastTimestamp.Before(&e.FirstTimestamp) {
			t.Errorf("lastTimestamp %v before firstTimestamp %v", e.LastTimestamp, e.FirstTimestamp)
		}
	}
	if len(evs.Items) != 3 {
		t.Errorf("%d Event objects, want 3 (one per distinct message): %v", len(evs.Items), counts)
	}
	if c := counts["Unhealthy/Readiness probe failed: connection refused"]; c != 3 {
		t.Errorf("repeated event count %d, want 3 (all: %v)", c, counts)
	}

	// Its Event expired (TTL) or was deleted: the next repeat starts over with count 1.
	for _, e := range evs.Items {
		if e.Count == 3 {
			if err := srv.Client.CoreV1().Events("default").Delete(ctx, e.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	emit("Unhealthy", "Readiness probe failed: connection refused")
	evs, err = srv.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		if e.Message == "Readiness probe failed: connection refused" {
			found = true
			if e.Count != 1 {
				t.Errorf("recreated event count %d, want 1", e.Count)
			}
		}
	}
	if !found {
		t.Error("repeat after deletion wrote no event")
	}
}

// While busy() reports pods being started, the recorder holds an event back until it is
// maxEventHold old (measured from its LastTimestamp); it writes it as soon as busy() turns
// false, and even while busy when the event is already older than that.
func TestRecorderHoldsEventsWhileBusy(t *testing.T) {
	cs := fake.NewClientset()
	r := newRecorder(cs, "n1", slog.New(slog.DiscardHandler))
	var busy atomic.Bool
	busy.Store(true)
	r.busy = busy.Load
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); r.run(ctx) }()
	defer func() { cancel(); <-done }()

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"}}
	written := func() map[string]bool {
		t.Helper()
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, e := range evs.Items {
			m[e.Reason] = true
		}
		return m
	}
	waitWritten := func(reason string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !written()[reason]; {
			if time.Now().After(deadline) {
				t.Fatalf("event %s never written (busy=%v)", reason, busy.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	// A fresh event is not written while busy: watch it for 200 ms (well under
	// maxEventHold, past which the recorder writes it anyway).
	before := time.Now() // the event's LastTimestamp is no earlier
	r.event(pod, v1.EventTypeNormal, "Fresh", "app", "created")
	for time.Since(before) < 200*time.Millisecond {
		if written()["Fresh"] {
			t.Fatal("event written while busy and younger than maxEventHold")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Released by busy() turning false.
	busy.Store(false)
	waitWritten("Fresh")

	// Busy again: an event that already waited longer than maxEventHold (it happened while
	// the queue was blocked) goes out without waiting.
	busy.Store(true)
	old := metav1.NewTime(time.Now().Add(-maxEventHold - time.Second))
	r.ch <- &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "p.old", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u1"},
		Reason:         "Old", Message: "happened a while ago", Type: v1.EventTypeNormal,
		FirstTimestamp: old, LastTimestamp: old, Count: 1,
	}
	waitWritten("Old")

	// What releases a held event is busy() turning false, not its age: one stamped ahead
	// of the clock never ages past maxEventHold during the test, yet goes out once the node
	// is idle.
	ahead := metav1.NewTime(time.Now().Add(time.Hour))
	r.ch <- &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "p.ahead", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u1"},
		Reason:         "Ahead", Message: "held", Type: v1.EventTypeNormal,
		FirstTimestamp: ahead, LastTimestamp: ahead, Count: 1,
	}
	for i := 0; i < 20; i++ {
		if written()["Ahead"] {
			t.Fatal("event written while busy and younger than maxEventHold")
		}
		time.Sleep(10 * time.Millisecond)
	}
	busy.Store(false)
	waitWritten("Ahead")
}
