package nodewasm_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

func loadBad(t *testing.T, mode int, policy string) *nodewasmtest.Plugin {
	t.Helper()
	p, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Name: "bad", Path: wat(t, "bad.wat"), FailurePolicy: policy, MemoryLimit: resource.MustParse("1Mi")}, Args: []byte(fmt.Sprint(mode))})
	if err != nil {
		t.Fatal(err)
	}
	p.Container = "c" // bad.wat behaves for "app"
	return p
}

// TestMisbehavingProbesAreProbeFailures: a probe plugin that loops, traps, runs out of
// memory, returns garbage or passes a bad pointer fails the probe with that reason (or
// passes it under Ignore), returns within its time limit, and the next call gets a fresh
// instance that works.
func TestMisbehavingProbesAreProbeFailures(t *testing.T) {
	for _, tt := range []struct {
		mode   int
		reason wasmhost.FailureReason
	}{
		{1, wasmhost.ReasonTimeout},
		{2, wasmhost.ReasonTrap},
		{3, wasmhost.ReasonMemory},
		{4, wasmhost.ReasonGarbage},
		{5, wasmhost.ReasonBadPointer},
	} {
		t.Run(string(tt.reason), func(t *testing.T) {
			p := loadBad(t, tt.mode, config.Fail)
			r := p.Probe(t, nodewasm.ProbeLiveness, 200*time.Millisecond)
			var ce *wasmhost.CallError
			if !errors.As(r.Err, &ce) || ce.Reason != tt.reason {
				t.Fatalf("call: %+v, want a %s failure", r, tt.reason)
			}
			// As the kubelet sees it: a failure naming the plugin and the reason.
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			res, msg := p.Plugin.Probe(ctx, p.Pod, "c", nodewasm.ProbeLiveness, nodewasmtest.PodIP)
			if res != probe.Failure || !strings.Contains(msg, "wasm plugin bad failed ("+string(tt.reason)+")") {
				t.Fatalf("probe: %s %q", res, msg)
			}
			// The instance was replaced (or kept, for garbage): the plugin still serves.
			if res, msg := p.Plugin.Probe(context.Background(), p.Pod, "app", nodewasm.ProbeLiveness, nodewasmtest.PodIP); res != probe.Success {
				t.Fatalf("next call: %s %q", res, msg)
			}
			ig := loadBad(t, tt.mode, config.Ignore)
			ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel2()
			if res, msg := ig.Plugin.Probe(ctx2, ig.Pod, "c", nodewasm.ProbeLiveness, nodewasmtest.PodIP); res != probe.Success {
				t.Fatalf("Ignore: %s %q", res, msg)
			}
		})
	}
}

// TestMisbehavingPreStopEndsAtTheGracePeriod: a preStop that loops, sleeps forever or
// waits on a server that never answers ends when the grace period does, with a failure
// naming the reason; under Ignore without one.
func TestMisbehavingPreStopEndsAtTheGracePeriod(t *testing.T) {
	hang := serve(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server notices the client closing
		<-r.Context().Done()
	}))
	const grace = 300 * time.Millisecond
	t.Run("server never answers", func(t *testing.T) {
		p := nodewasmtest.Load(t, wat(t, "req.wat"), fmt.Sprintf(`"%d /drain"`, hang))
		start := time.Now()
		r := p.PreStop(t, grace)
		// The request gives up just before the grace period ends (-110 ETIMEDOUT), so the
		// guest still returns its own answer in time instead of being cut off.
		if r.Err != nil || r.Reason != "-110" {
			t.Fatalf("%+v, want the guest's own answer with -110 (ETIMEDOUT)", r)
		}
		if took := time.Since(start); took > grace+time.Second {
			t.Fatalf("preStop took %s with a grace period of %s", took, grace)
		}
	})
	for _, mode := range []int{1, 6, 2} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			p := loadBad(t, mode, config.Fail)
			ctx, cancel := context.WithTimeout(context.Background(), grace)
			defer cancel()
			start := time.Now()
			err := p.Plugin.PreStop(ctx, p.Pod, "c", nodewasmtest.PodIP)
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "wasm plugin bad failed") {
				t.Fatalf("err %v", err)
			}
			// Not a speed check: the hook must not outlive the grace period by more than
			// scheduling noise, or termination would be late.
			if took > grace+time.Second {
				t.Fatalf("preStop took %s with a grace period of %s", took, grace)
			}
			ig := loadBad(t, mode, config.Ignore)
			ctx2, cancel2 := context.WithTimeout(context.Background(), grace)
			defer cancel2()
			if err := ig.Plugin.PreStop(ctx2, ig.Pod, "c", nodewasmtest.PodIP); err != nil {
				t.Fatalf("Ignore: %v", err)
			}
		})
	}
}

// TestPreStopWaitingForAnInstanceEndsAtTheGracePeriod: with every instance held by a
// preStop that sleeps to the end of its grace period, another pod's preStop does not wait
// past its own grace period for one: it fails at it, naming why.
func TestPreStopWaitingForAnInstanceEndsAtTheGracePeriod(t *testing.T) {
	p, err := nodewasmtest.LoadSpec(t, config.HookPlugin{Spec: modulespec.Spec{Name: "bad", Path: wat(t, "bad.wat"), Pool: 1}, Args: []byte("6")})
	if err != nil {
		t.Fatal(err)
	}
	hold, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.Plugin.PreStop(hold, p.Pod, "c", nodewasmtest.PodIP) }()
	time.Sleep(100 * time.Millisecond) // the first call holds the only instance
	const grace = 300 * time.Millisecond
	ctx, cancel2 := context.WithTimeout(context.Background(), grace)
	defer cancel2()
	start := time.Now()
	err = p.Plugin.PreStop(ctx, p.Pod, "c", nodewasmtest.PodIP)
	if took := time.Since(start); took > grace+time.Second {
		t.Fatalf("the waiting preStop took %s with a grace period of %s", took, grace)
	}
	if err == nil || !strings.Contains(err.Error(), "failed (timeout): no instance was free within the grace period") {
		t.Fatalf("waiting preStop: %v", err)
	}
	// A probe of the same plugin has pools of its own: it is not held up.
	pctx, cancel3 := context.WithTimeout(context.Background(), time.Second)
	defer cancel3()
	if r, msg := p.Plugin.Probe(pctx, p.Pod, "app", nodewasm.ProbeReadiness, nodewasmtest.PodIP); r != probe.Success {
		t.Fatalf("probe while preStops hold their pool: %s %q", r, msg)
	}
	if err := <-done; err == nil {
		t.Fatal("the sleeping preStop succeeded")
	}
}
