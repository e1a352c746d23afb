package wasmhost_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// A memory bomb (a guest growing to its limit) grows in place in memory reserved off the
// Go heap: the call is a memory-limit failure as before, and the Go heap does not pay for
// the guest's 64 MiB (with the heap memory of before, it does: the check tells them apart).
func TestMemoryBombStaysOffTheGoHeap(t *testing.T) {
	ctx := context.Background()
	const limit = 64 << 20
	for _, heap := range []bool{false, true} {
		opts := wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}}
		if heap {
			opts = wasmhost.WithHeapMemory(opts)
		}
		h, err := wasmhost.New(opts)
		if err != nil {
			t.Fatal(err)
		}
		m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "bomb", Path: wasmbuild.WAT(t, "plugins/testdata/grow.wat"), MemoryLimit: limit, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		p, err := m.NewPool(ctx, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := wasmhost.MemoryReserved(p); got == heap {
			t.Errorf("heap=%v: memory reserved off the heap: %v", heap, got)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err = newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n")).Do(ctx, p)
		runtime.ReadMemStats(&after)
		var ce *wasmhost.CallError
		if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonMemory {
			t.Fatalf("heap=%v: bomb: got %v, want a %s failure", heap, err, wasmhost.ReasonMemory)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("heap=%v: the bomb allocated %d KiB on the Go heap", heap, alloc>>10)
		if !heap && alloc > limit/8 {
			t.Errorf("the bomb allocated %d bytes on the Go heap, want far less than its %d bytes of memory", alloc, limit)
		}
		if heap && alloc < limit {
			t.Errorf("heap memory: the bomb allocated only %d bytes on the Go heap: the check cannot tell the two apart", alloc)
		}
		p.Close()
		_ = m.Close(ctx)
		_ = h.Close(ctx)
	}
}

var touch = &wasmhost.Kind{Name: "touch", Export: "wasmkube_touch"}

var touchExt = wasmhost.Extension{Name: "touch", Kinds: []*wasmhost.Kind{touch}, Funcs: []wasmhost.HostFunc{
	{Name: "ready", Fn: func(c *wasmhost.Call, _ api.Module, _ []uint64) { close(c.Data.(chan struct{})) }},
}}

// An instance closed while a call runs on it (its runtime closed under the call, as a
// host closing) keeps its memory mapped until the call has left it: the call ends at its
// time limit instead of faulting on unmapped memory, and then the mapping is released.
func TestMemoryOutlivesACloseUnderACall(t *testing.T) {
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{touchExt}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "touch", Path: wasmbuild.WAT(t, "plugins/testdata/touchloop.wat"), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.NewPool(ctx, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	released := wasmhost.Released(p)
	if len(released) != 1 {
		t.Fatalf("%d instances with reserved memory, want 1", len(released))
	}
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- p.Do(ctx, &wasmhost.Call{Kind: touch, Data: ready}) }()
	<-ready
	// The module's last user lets go and the host closes its runtime, and with it the
	// instance in the call.
	p.Close()
	_ = m.Close(ctx)
	_ = h.Close(ctx)
	if err := <-done; err == nil {
		t.Fatal("the call on a closed instance succeeded")
	}
	if !released[0]() {
		t.Error("the instance's memory is still mapped after its call returned and it was closed")
	}
}

// BenchmarkMemoryBomb compares linear memory reserved off the Go heap with the Go heap
// memory of before, side by side in one run: each iteration makes one memory bomb call
// (grow.wat: grows 64 KiB at a time to its 64 MiB limit, then aborts) on each of two
// hosts, one per memory, alternately, while 8 goroutines make small calls and allocate
// 64 KiB of garbage each (an API server's work). It reports each bomb call's p50 and max
// and the other goroutines' p99 while that bomb ran:
//
//	go test ./plugins/wasmhost -run '^$' -bench MemoryBomb -benchtime 40x
func BenchmarkMemoryBomb(b *testing.B) {
	ctx := context.Background()
	path := wasmbuild.WAT(b, "plugins/testdata/grow.wat")
	type arm struct {
		name   string
		bomb   *wasmhost.Pool
		calls  []time.Duration
		others []time.Duration
	}
	arms := []*arm{{name: "reserved"}, {name: "heap"}}
	var small *wasmhost.Pool
	for _, a := range arms {
		opts := wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}}
		if a.name == "heap" {
			opts = wasmhost.WithHeapMemory(opts)
		}
		h, err := wasmhost.New(opts)
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(ctx)
		m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "bomb", Path: path, MemoryLimit: 64 << 20, Timeout: 10 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Close(ctx)
		if a.bomb, err = m.NewPool(ctx, nil, 1); err != nil {
			b.Fatal(err)
		}
		defer a.bomb.Close()
		if small == nil {
			if small, err = m.NewPool(ctx, nil, 8); err != nil {
				b.Fatal(err)
			}
			defer small.Close()
		}
	}
	var cur atomic.Pointer[arm]
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sink atomic.Pointer[[]byte]
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newCall(schedwasm.Filter, testPod("p", nil), testNodes("n"))
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				garbage := make([]byte, 64<<10)
				sink.Store(&garbage)
				if err := c.Do(ctx, small); err != nil {
					b.Error(err)
					return
				}
				if a := cur.Load(); a != nil {
					mu.Lock()
					a.others = append(a.others, time.Since(start))
					mu.Unlock()
				}
			}
		}()
	}
	bad := testPod("p", map[string]string{"bad": ""})
	b.ResetTimer()
	for range b.N {
		for _, a := range arms {
			cur.Store(a)
			start := time.Now()
			err := newCall(schedwasm.Filter, bad, testNodes("n")).Do(ctx, a.bomb)
			a.calls = append(a.calls, time.Since(start))
			cur.Store(nil)
			var ce *wasmhost.CallError
			if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonMemory {
				b.Fatalf("%s: bomb: %v, want a memory-limit failure", a.name, err)
			}
		}
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	q := func(d []time.Duration, f float64) float64 {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return float64(d[int(f*float64(len(d)-1)+0.5)]) / 1e6
	}
	for _, a := range arms {
		mu.Lock()
		b.ReportMetric(q(a.calls, 0.5), a.name+"-bomb-p50-ms")
		b.ReportMetric(q(a.calls, 1), a.name+"-bomb-max-ms")
		b.ReportMetric(q(a.others, 0.99), a.name+"-others-p99-ms")
		mu.Unlock()
	}
}
