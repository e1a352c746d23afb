package admitwasm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The policy's part in the decision explorer's record of a request
// (admission.Attributes.RecordDecision, docs/explorer.md): built only when the request
// is recorded, from what the call returned, without copies: the patch is the call's own
// bytes (cloned out of the module's memory once, for the patch itself), the module one
// value per policy. Records are never modified, so sharing them is safe.

func moduleDigest(bin []byte) string {
	sum := sha256.Sum256(bin)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// decision is the policy's entry with the fields every verdict has.
func (p *Policy) decision(k *wasmhost.Kind, verdict string) explorerv1.PolicyDecision {
	phase := "Validating"
	if k == Mutate {
		phase = "Mutating"
	}
	mode := "Enforce"
	if p.monitor {
		mode = "Monitor"
	}
	return explorerv1.PolicyDecision{Name: p.spec.Name, Kind: "WasmPolicy", Phase: phase, Mode: mode, Verdict: verdict, Wasm: p.wasm}
}

// recordSkip records that the policy did not run on the request, and why.
func (p *Policy) recordSkip(a *admission.Attributes, k *wasmhost.Kind, why string) {
	if a.Recording() {
		d := p.decision(k, explorerv1.PolicySkipped)
		d.SkipReason = why
		a.RecordDecision(d)
	}
}

// recordCall records the outcome of a call: callErr is the call's failure, err what the
// policy returned to the chain.
func (p *Policy) recordCall(a *admission.Attributes, k *wasmhost.Kind, c *Call, callErr, err error, elapsed time.Duration) {
	if !a.Recording() {
		return
	}
	d := p.decision(k, explorerv1.PolicyAllowed)
	d.DurationNanos = elapsed.Nanoseconds()
	d.Warnings = c.Warnings
	for _, an := range c.AuditAnnotations {
		if d.AuditAnnotations == nil {
			d.AuditAnnotations = map[string]string{}
		}
		d.AuditAnnotations[p.spec.Name+"/"+an.Key] = an.Value
	}
	switch {
	case callErr != nil:
		d.Verdict, d.FailurePolicy = explorerv1.PolicyFailed, string(p.spec.FailurePolicy)
		if d.FailurePolicy == "" {
			d.FailurePolicy = string(Fail)
		}
		d.Failure = callErr.Error()
		var ce *wasmhost.CallError
		if errors.As(callErr, &ce) {
			d.Failure = fmt.Sprintf("%s: %v", ce.Reason, ce.Err)
		}
	case c.Code == CodeDenied:
		d.Message = c.Reason
		if err != nil || p.monitor {
			d.Verdict = explorerv1.PolicyDenied
		} else {
			// The policy's validationActions have no Deny: its verdict warned or audited,
			// as a ValidatingAdmissionPolicy's binding without Deny.
			d.Verdict = explorerv1.PolicyAudited
			if p.warn {
				d.Verdict = explorerv1.PolicyWarned
			}
		}
	case c.Patch != nil:
		d.Verdict = explorerv1.PolicyMutated
		if json.Valid(c.Patch) {
			d.Patch = json.RawMessage(c.Patch)
		}
	}
	a.RecordDecision(d)
}

// SetDecisionRecorder implements admission.WantsDecisionRecorder: the policies' swaps go
// to the API server's decision records.
func (o *Policies) SetDecisionRecorder(r *explorer.Recorder) { o.explorer.Store(r) }

// recordSwaps records a reload of the file tier: one swap per policy added, changed
// (module or declaration) or removed; a failed reload is one failed swap with its reason.
func (o *Policies) recordSwaps(old, ps *policySet, err error) {
	r := o.explorer.Load()
	if r == nil {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	add := func(sw explorerv1.Swap) {
		r.Record(func() explorerv1.Record {
			return explorerv1.Record{Type: explorerv1.TypeSwap, Time: now, Swap: &sw}
		})
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
	for _, p := range ps.byName {
		q, had := old.byName[p.spec.Name]
		switch {
		case !had:
			add(explorerv1.Swap{Policy: p.spec.Name, Tier: "file", Changes: []string{"policy added"}, To: p.module(), Result: explorerv1.SwapApplied})
		case q != p:
			add(explorerv1.Swap{Policy: p.spec.Name, Tier: "file", Changes: []string{"module or declaration changed"}, From: q.module(), To: p.module(), Result: explorerv1.SwapApplied})
		}
	}
	for _, q := range old.byName {
		if _, ok := ps.byName[q.spec.Name]; !ok {
			add(explorerv1.Swap{Policy: q.spec.Name, Tier: "file", Changes: []string{"policy removed"}, From: q.module(), Result: explorerv1.SwapApplied})
		}
	}
}

func (p *Policy) module() *explorerv1.Module { return p.wasm }
