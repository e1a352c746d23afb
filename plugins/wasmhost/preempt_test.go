package wasmhost_test

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// A runaway guest must not keep the Go runtime from stopping the world: garbage
// collections keep completing while it loops, and it still stops at its time limit.
// (Machine code cannot be preempted; the inserted check leaves it for Go regularly.)
func TestRunawayLoopDoesNotBlockGC(t *testing.T) {
	h, _ := newHost(t)
	m := load(t, h, "gc", "loop.wat", wasmhost.LoadOptions{Timeout: 300 * time.Millisecond})
	p, err := m.NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		done <- newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n0")).Do(context.Background(), p)
	}()
	gcs := 0
	for {
		select {
		case err := <-done:
			var ce *wasmhost.CallError
			if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonTimeout {
				t.Fatalf("got %v, want a timeout", err)
			}
			if gcs == 0 {
				t.Fatal("no garbage collection completed while the guest looped")
			}
			return
		default:
			goruntime.GC()
			gcs++
		}
	}
}
