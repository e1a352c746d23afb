package syncloop

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A first sync runs without a change, a failed one is retried without a change, and a
// signal makes another; Run returns when its context ends.
func TestRunSyncsRetriesAndFollowsChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	changed := make(chan struct{}, 1)
	calls := make(chan int, 10)
	n, failures := 0, 0
	sync := func() error {
		n++
		calls <- n
		if n == 2 {
			return errors.New("table busy")
		}
		return nil
	}
	done := make(chan struct{})
	go func() { Run(ctx, changed, time.Millisecond, sync, func(error) { failures++ }); close(done) }()
	if got := <-calls; got != 1 {
		t.Fatalf("first sync: call %d", got)
	}
	changed <- struct{}{}
	if got := <-calls; got != 2 {
		t.Fatalf("sync after a change: call %d", got)
	}
	if got := <-calls; got != 3 { // the retry of the failed one, with no change signalled
		t.Fatalf("retry: call %d", got)
	}
	cancel()
	<-done
	if failures != 1 {
		t.Fatalf("failures reported: %d, want 1", failures)
	}
}
