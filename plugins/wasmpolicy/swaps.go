package wasmpolicy

import (
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
)

// RecordSwaps returns a StatusSink that passes every observation on to sink and also
// records, in the component's decision explorer (docs/explorer.md), each revision of an
// API-tier policy the component put in force (Active: a Swap with result Applied) or
// refused (Failed: a Swap with result Failed and the reason; the revision in force
// stays), as the file tier's reloads are recorded. It reads the phases the loader
// already reports, so it sees exactly what the WasmPolicy's status says, at the same
// moment. rec is asked at each observation (a component may make its recorder after
// its loader); a nil recorder records nothing.
func RecordSwaps(sink StatusSink, rec func() *explorer.Recorder) StatusSink {
	if sink == nil {
		sink = NopSink{}
	}
	return &swapSink{next: sink, rec: rec, active: map[string]policyv1alpha1.ComponentStatus{}, failed: map[string]policyv1alpha1.ComponentStatus{}}
}

type swapSink struct {
	next StatusSink
	rec  func() *explorer.Recorder

	mu sync.Mutex
	// active is each policy's revision last put in force here; failed its last failure
	// recorded since (a fetch retried every RetryInterval fails again the same way: one
	// swap, not one per retry).
	active map[string]policyv1alpha1.ComponentStatus
	failed map[string]policyv1alpha1.ComponentStatus
}

// Observe implements StatusSink.
func (s *swapSink) Observe(policy string, st policyv1alpha1.ComponentStatus) {
	s.next.Observe(policy, st)
	s.mu.Lock()
	prev, had := s.active[policy]
	switch st.Phase {
	case policyv1alpha1.PhaseActive:
		s.active[policy] = st
		delete(s.failed, policy)
	case policyv1alpha1.PhaseFailed:
		f, was := s.failed[policy]
		if was && f.ObservedGeneration == st.ObservedGeneration && f.Digest == st.Digest && f.Reason == st.Reason && f.Message == st.Message {
			s.mu.Unlock()
			return
		}
		s.failed[policy] = st
	}
	s.mu.Unlock()
	sw, ok := swapOf(policy, prev, had, st)
	if !ok {
		return
	}
	r := s.rec()
	if r == nil {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	r.Record(func() explorerv1.Record {
		return explorerv1.Record{Type: explorerv1.TypeSwap, Time: now, Swap: &sw}
	})
}

// swapOf is the Swap an observation makes, if any: a new revision Active (generation,
// digest or mode changed) or Failed. prev is the revision in force before (had: there
// was one).
func swapOf(policy string, prev policyv1alpha1.ComponentStatus, had bool, st policyv1alpha1.ComponentStatus) (explorerv1.Swap, bool) {
	sw := explorerv1.Swap{Policy: policy, Tier: TierAPI, Generation: st.ObservedGeneration}
	if had {
		sw.From = moduleOf(prev.Digest)
	}
	switch st.Phase {
	case policyv1alpha1.PhaseActive:
		if had && prev.ObservedGeneration == st.ObservedGeneration && prev.Digest == st.Digest && prev.Mode == st.Mode {
			return sw, false
		}
		sw.Result, sw.To = explorerv1.SwapApplied, moduleOf(st.Digest)
		if !had {
			sw.Changes = []string{fmt.Sprintf("policy added (generation %d, %s mode)", st.ObservedGeneration, st.Mode)}
			return sw, true
		}
		if prev.ObservedGeneration != st.ObservedGeneration {
			sw.Changes = append(sw.Changes, fmt.Sprintf("generation %d -> %d", prev.ObservedGeneration, st.ObservedGeneration))
		}
		if prev.Digest != st.Digest {
			sw.Changes = append(sw.Changes, fmt.Sprintf("module %s -> %s", short(prev.Digest), short(st.Digest)))
		}
		if prev.Mode != st.Mode {
			sw.Changes = append(sw.Changes, fmt.Sprintf("mode %s -> %s", prev.Mode, st.Mode))
		}
		return sw, true
	case policyv1alpha1.PhaseFailed:
		sw.Result, sw.To = explorerv1.SwapFailed, moduleOf(st.Digest)
		sw.Changes = []string{fmt.Sprintf("generation %d not put in force", st.ObservedGeneration)}
		sw.Reason = st.Message
		if st.Reason != "" {
			sw.Reason = st.Reason + ": " + st.Message
		}
		return sw, true
	}
	return sw, false
}

func moduleOf(digest string) *explorerv1.Module {
	if digest == "" {
		return nil
	}
	return &explorerv1.Module{Digest: digest}
}

// short is a digest's first 12 hex digits, as the file tier's swaps name modules.
func short(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12]
	}
	return d
}
