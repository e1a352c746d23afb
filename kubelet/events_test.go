package kubelet

import (
	"context"
	"log/slog"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
