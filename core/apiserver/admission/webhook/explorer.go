package webhook

import (
	"errors"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// decision is a webhook's part in the decision explorer's record of a request
// (docs/explorer.md): callErr is what the call returned (a rejection, a failure to call,
// or nil), changed whether a mutating webhook's patch changed the object.
func decision(name string, fp *admissionregistrationv1.FailurePolicyType, mutating, changed bool, started time.Time, callErr error,
	warnings []string, audit map[string]string) explorerv1.PolicyDecision {
	d := explorerv1.PolicyDecision{Name: name, Kind: "ValidatingWebhook", Phase: "Validating", Verdict: explorerv1.PolicyAllowed,
		Warnings: warnings, AuditAnnotations: audit, DurationNanos: time.Since(started).Nanoseconds()}
	if mutating {
		d.Kind, d.Phase = "MutatingWebhook", "Mutating"
		if changed {
			d.Verdict = explorerv1.PolicyMutated
		}
	}
	var rej *webhookutil.ErrWebhookRejection
	switch {
	case callErr == nil:
	case errors.As(callErr, &rej):
		d.Verdict, d.Message = explorerv1.PolicyDenied, rej.Status.ErrStatus.Message
	default:
		d.Verdict, d.Failure, d.FailurePolicy = explorerv1.PolicyFailed, callErr.Error(), string(admissionregistrationv1.Fail)
		if fp != nil {
			d.FailurePolicy = string(*fp)
		}
	}
	return d
}
