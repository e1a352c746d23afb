package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/upstreamattrs"
)

// Validate implements admission.ValidationInterface: the validating webhooks that match
// are called at once, in parallel (as upstream), each with the final object; the request
// is refused by the first of them, in the configurations' order, that refuses it or
// fails under failurePolicy Fail.
func (w *Webhooks) Validate(ctx context.Context, a *admission.Attributes) error {
	_, val, err := w.configurations(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	_, hooks := w.val.hooks(nil, val)
	if len(hooks) == 0 {
		return nil
	}
	va := upstreamattrs.Versioned(a)
	if rules.IsExemptAdmissionConfigurationResource(va) {
		return nil
	}
	var invs []*generic.WebhookInvocation
	for _, h := range hooks {
		inv, serr := w.shouldCall(ctx, h, va)
		if serr != nil {
			return serr
		}
		if inv != nil {
			invs = append(invs, inv)
		}
	}
	if len(invs) == 0 {
		return nil
	}
	// Each call gets its own Attributes for warnings and audit annotations, merged in
	// order after all have answered: the parallel calls never share a map.
	errs := make([]error, len(invs))
	sub := make([]admission.Attributes, len(invs))
	var decisions []explorerv1.PolicyDecision
	if a.Recording() {
		decisions = make([]explorerv1.PolicyDecision, len(invs))
	}
	var wg sync.WaitGroup
	for i, inv := range invs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, ok := inv.Webhook.GetValidatingWebhook()
			if !ok {
				errs[i] = apierrors.NewInternalError(fmt.Errorf("validating webhook dispatch requires a ValidatingWebhook, got %s", inv.Webhook.GetType()))
				return
			}
			started := time.Now()
			_, err := w.call(ctx, h.Name, h.TimeoutSeconds, h.SideEffects, inv, va, &sub[i], false)
			errs[i] = w.outcome(ctx, h.Name, h.FailurePolicy, false, a, started, err)
			if decisions != nil {
				decisions[i] = decision(h.Name, h.FailurePolicy, false, false, started, err, sub[i].Warnings, sub[i].AuditAnnotations)
			}
			if err != nil && errs[i] == nil {
				sub[i].AddAuditAnnotation("failed-open.validating.webhook.admission.k8s.io/"+"round_0_index_"+fmt.Sprint(i), h.Name)
			}
		}()
	}
	wg.Wait()
	for _, d := range decisions {
		a.RecordDecision(d)
	}
	for i := range sub {
		for _, warn := range sub[i].Warnings {
			a.AddWarning(warn)
		}
		for k, v := range sub[i].AuditAnnotations {
			a.AddAuditAnnotation(k, v)
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
