package worker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestRunRetriesAndRequeues checks the loop's contract: an error retries the key, a
// RequeueAfter brings it back without an error, success forgets it, and both the
// reconcile-duration and the queue metrics are recorded.
func TestRunRetriesAndRequeues(t *testing.T) {
	reg := prometheus.NewRegistry()
	RegisterMetrics(reg)
	q := NewQueue("test_queue")
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	reconcile := func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch {
		case key == "flaky" && calls[key] < 3:
			return errors.New("transient")
		case key == "later" && calls[key] == 1:
			return RequeueAfter(10 * time.Millisecond)
		}
		if calls["flaky"] >= 3 && calls["later"] >= 2 && calls["ok"] >= 1 {
			select {
			case <-done:
			default:
				close(done)
			}
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	finished := make(chan struct{})
	go func() { Run(ctx, "test", q, 2, reconcile, nil); close(finished) }()
	for _, k := range []string{"flaky", "later", "ok"} {
		q.Add(k)
	}
	<-done
	cancel()
	<-finished
	mu.Lock()
	defer mu.Unlock()
	if calls["flaky"] != 3 || calls["later"] != 2 || calls["ok"] != 1 {
		t.Fatalf("calls = %v, want flaky 3, later 2, ok 1", calls)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
		if mf.GetName() == "wasmkube_controller_reconcile_duration_seconds" && len(mf.GetMetric()) < 2 {
			t.Errorf("reconcile duration has %d series, want success and error", len(mf.GetMetric()))
		}
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"wasmkube_controller_reconcile_duration_seconds", "wasmkube_workqueue_adds_total", "wasmkube_workqueue_retries_total", "wasmkube_workqueue_depth"} {
		if !strings.Contains(all, want) {
			t.Errorf("metric %s not registered (have %s)", want, all)
		}
	}
}
