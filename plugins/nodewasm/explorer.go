package nodewasm

import (
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The decision explorer's records of the node's wasm hooks (docs/explorer.md): each wasm
// probe and preStop run, and each apply of the hook plugins. The kubelet keeps them in
// its ring and serves them to the API server's node proxy.

// SetDecisionRecorder makes the hooks record their runs and swaps into r.
func (hk *Hooks) SetDecisionRecorder(r *explorer.Recorder) { hk.explorer.Store(r) }

// DecisionRecorder is the recorder the hooks record into (nil until set): the swaps of
// the node's API-tier WasmPolicies go there too (plugins/wasmpolicy.RecordSwaps).
func (hk *Hooks) DecisionRecorder() *explorer.Recorder { return hk.explorer.Load() }

// recordRun records one run of plugin p (named name) for t.
func (hk *Hooks) recordRun(t probe.Target, hookName, name string, p *Plugin, outcome, msg string, d time.Duration) {
	r := hk.explorer.Load()
	if r == nil {
		return
	}
	end := time.Now()
	// The record is built when read (explorer.Builder): copy the pod's names now.
	ref, node := explorerv1.ObjectRef{Namespace: t.Pod.Namespace, Name: t.Pod.Name, UID: string(t.Pod.UID)}, t.Pod.Spec.NodeName
	container, path := t.Container.Name, p.path
	r.Record(func() explorerv1.Record {
		return explorerv1.Record{Type: explorerv1.TypeHookRun, Time: metav1.NewMicroTime(end), Source: node,
			HookRun: &explorerv1.HookRun{Pod: ref, Node: node, Container: container, Hook: hookName, Handler: name, Wasm: &explorerv1.Module{Path: path},
				Outcome: outcome, Message: msg, DurationNanos: d.Nanoseconds()}}
	})
}

// probeOutcome names a probe result as a HookRun outcome.
func probeOutcome(r probe.Result) string {
	switch r {
	case probe.Success:
		return "Success"
	case probe.Failure:
		return "Failure"
	}
	return "Error"
}

// recordApply records an apply of the hook plugins: one swap per plugin added, changed
// or removed, or one failed swap with the reason.
func (hk *Hooks) recordApply(old, next *pluginSet, err error) {
	r := hk.explorer.Load()
	if r == nil || errors.Is(err, configwatch.ErrSuperseded) {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	add := func(sw explorerv1.Swap) {
		r.Record(func() explorerv1.Record { return explorerv1.Record{Type: explorerv1.TypeSwap, Time: now, Swap: &sw} })
	}
	if err != nil {
		policy := ""
		var le *wasmhost.LoadError
		if errors.As(err, &le) {
			policy = le.Plugin
		}
		add(explorerv1.Swap{Policy: policy, Tier: "file", Result: explorerv1.SwapFailed, Reason: err.Error()})
		return
	}
	if old == nil {
		return
	}
	for name, p := range next.plugins {
		q, had := old.plugins[name]
		switch {
		case !had:
			add(explorerv1.Swap{Policy: name, Tier: "file", Changes: []string{"hook plugin added"}, To: &explorerv1.Module{Path: p.path}, Result: explorerv1.SwapApplied})
		case q != p:
			add(explorerv1.Swap{Policy: name, Tier: "file", Changes: []string{"module or declaration changed"}, From: &explorerv1.Module{Path: q.path}, To: &explorerv1.Module{Path: p.path}, Result: explorerv1.SwapApplied})
		}
	}
	for name, q := range old.plugins {
		if _, ok := next.plugins[name]; !ok {
			add(explorerv1.Swap{Policy: name, Tier: "file", Changes: []string{"hook plugin removed"}, From: &explorerv1.Module{Path: q.path}, Result: explorerv1.SwapApplied})
		}
	}
}
