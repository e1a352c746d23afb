package wasmhost_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// TestPoolHammer: many goroutines call pools of a few instances with good calls, traps,
// timeouts and cancellations mixed in, while the pools are closed under them and replaced
// (as a config reload does). Each call gets the outcome its input asks for; at no time do
// more instances exist than the pool's size; after each pool is closed and its calls have
// returned no instance is left, the discards match the traps and timeouts, and no
// goroutine is left behind. Run it with -race (make test does).
func TestPoolHammer(t *testing.T) {
	h, _ := newHost(t)
	m := load(t, h, "hammer", "hammer.wat", wasmhost.LoadOptions{Timeout: 100 * time.Millisecond})
	baseline := runtime.NumGoroutine()

	const (
		size       = 4
		workers    = 12
		rounds     = 3
		callsEach  = 20
		maxPending = 5 * time.Millisecond
	)
	for round := 0; round < rounds; round++ {
		p, err := m.NewPool(context.Background(), nil, size)
		if err != nil {
			t.Fatal(err)
		}
		var (
			wg                                            sync.WaitGroup
			ok, traps, timeouts, canceled, closedRefusals atomic.Int64
			overSize                                      atomic.Int64
			stopMon                                       = make(chan struct{})
		)
		go func() { // the live count never exceeds the pool's size
			for {
				select {
				case <-stopMon:
					return
				default:
				}
				if p.Live() > size {
					overSize.Add(1)
				}
				runtime.Gosched()
			}
		}()
		closeAt := int64(workers * callsEach * 3 / 4)
		var started atomic.Int64
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(seed, uint64(round)))
				for i := 0; i < callsEach; i++ {
					if started.Add(1) == closeAt {
						p.Close() // a config change replaces the plugin mid-traffic
					}
					var labels map[string]string
					// 0 good (40%), 1 trap (25%), 2 timeout (15%), 3 canceled (20%).
					kind := 0
					switch r := rng.IntN(20); {
					case r >= 16:
						kind = 3
					case r >= 13:
						kind = 2
					case r >= 8:
						kind = 1
					}
					switch kind {
					case 1:
						labels = map[string]string{"trap": ""}
					case 2, 3:
						labels = map[string]string{"loop": ""}
					}
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if kind == 3 { // the caller gives up before the time limit
						ctx, cancel = context.WithCancel(context.Background())
						d := time.Duration(rng.Int64N(int64(maxPending)))
						time.AfterFunc(d, cancel)
					}
					err := newCall(schedwasm.Filter, testPod("p", labels), testNodes("n0", "n1")).Do(ctx, p)
					cancel()
					var ce *wasmhost.CallError
					switch {
					case err == nil && kind == 0:
						ok.Add(1)
					case err != nil && strings.Contains(err.Error(), "plugin was closed"):
						closedRefusals.Add(1)
					case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonTrap && kind == 1:
						traps.Add(1)
					case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonTimeout && kind == 2:
						timeouts.Add(1)
					case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonTimeout && kind == 3:
						// The cancellation's goroutine did not run before the time limit
						// passed (guest code is not preemptible, and this machine is busy):
						// the call really did exceed its limit, and is a timeout.
						timeouts.Add(1)
					case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonCanceled && kind == 3:
						canceled.Add(1)
					default:
						errs <- fmt.Errorf("call of kind %d: %v", kind, err)
						return
					}
				}
			}(uint64(w))
		}
		wg.Wait()
		close(stopMon)
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := overSize.Load(); n != 0 {
			t.Errorf("round %d: more than %d instances live, %d times", round, size, n)
		}
		created, discarded := p.Stats()
		if live := p.Live(); live != 0 {
			t.Errorf("round %d: %d instances left after Close (created %d)", round, live, created)
		}
		// Every trap and timeout discarded its instance; a cancellation discards one only
		// if it interrupted a call (not one still waiting for an instance).
		if min := traps.Load() + timeouts.Load(); discarded < min || discarded > min+canceled.Load() {
			t.Errorf("round %d: discarded %d, want between %d and %d", round, discarded, min, min+canceled.Load())
		}
		if ok.Load() == 0 || traps.Load() == 0 || timeouts.Load() == 0 || closedRefusals.Load() == 0 {
			t.Errorf("round %d: the mix did not happen: ok %d traps %d timeouts %d canceled %d closed %d",
				round, ok.Load(), traps.Load(), timeouts.Load(), canceled.Load(), closedRefusals.Load())
		}
		t.Logf("round %d: ok %d traps %d timeouts %d canceled %d refused-closed %d; instances created %d discarded %d",
			round, ok.Load(), traps.Load(), timeouts.Load(), canceled.Load(), closedRefusals.Load(), created, discarded)
	}
	// Timers and AfterFuncs of the calls end shortly after them.
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines left behind (baseline %d):\n%s", n-baseline, baseline, buf[:runtime.Stack(buf, true)])
	}
}
