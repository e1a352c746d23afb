package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	webhookerrors "k8s.io/apiserver/pkg/admission/plugin/webhook/errors"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	webhookrequest "k8s.io/apiserver/pkg/admission/plugin/webhook/request"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

func dryRunUnsupported(name string) error { return webhookerrors.NewDryRunUnsupportedErr(name) }

// call sends one AdmissionReview to the webhook of inv and returns its checked
// response. Errors are upstream's: *webhookutil.ErrCallingWebhook when the webhook could
// not be reached or answered nonsense (failurePolicy decides), *webhookutil.ErrWebhookRejection
// when it refused. Its warnings and audit annotations are added to a (the audit keys
// prefixed by the webhook's name, as upstream).
func (w *Webhooks) call(ctx context.Context, name string, timeout *int32, sideEffects *admissionregistrationv1.SideEffectClass,
	inv *generic.WebhookInvocation, va *k8sadmission.VersionedAttributes, a *admission.Attributes, mutating bool) (*webhookrequest.AdmissionResponse, error) {
	if va.IsDryRun() {
		if err := dryRunAllowed(name, sideEffects); err != nil {
			return nil, err
		}
	}
	uid, request, response, err := webhookrequest.CreateAdmissionObjects(va, inv)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not create admission objects: %w", err), Status: apierrors.NewBadRequest("error creating admission objects")}
	}
	client, err := inv.Webhook.GetRESTClient(w.cm)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("could not get REST client: %w", err), Status: apierrors.NewInternalError(err)}
	}
	if timeout != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*timeout)*time.Second)
		defer cancel()
	}
	r := client.Post().Body(request)
	if deadline, ok := ctx.Deadline(); ok {
		if t := time.Until(deadline); t > 0 {
			// upstream rounds up to whole seconds: the webhook sees ?timeout=Ns
			if tr := t.Truncate(time.Second); tr != t {
				t = tr + time.Second
			}
			r.Timeout(t)
		}
	}
	if err := r.Do(ctx).Into(response); err != nil {
		var status *apierrors.StatusError
		if !errors.As(err, &status) {
			status = apierrors.NewServiceUnavailable("error calling webhook")
		}
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("failed to call webhook: %w", err), Status: status}
	}
	result, err := webhookrequest.VerifyAdmissionResponse(uid, mutating, response)
	if err != nil {
		return nil, &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: fmt.Errorf("received invalid webhook response: %w", err), Status: apierrors.NewServiceUnavailable("error validating webhook response")}
	}
	for k, v := range result.AuditAnnotations {
		a.AddAuditAnnotation(name+"/"+k, v)
	}
	for _, warn := range result.Warnings {
		a.AddWarning(warn)
	}
	if !result.Allowed {
		return result, &webhookutil.ErrWebhookRejection{Status: webhookerrors.ToStatusErr(name, result.Result)}
	}
	return result, nil
}

// outcome records the metrics of one call and turns its error into the request's fate
// under the webhook's failurePolicy: nil to go on (success, or a call failure under
// Ignore), else the error that refuses the request.
func (w *Webhooks) outcome(ctx context.Context, name string, fp *admissionregistrationv1.FailurePolicyType, mutating bool,
	a *admission.Attributes, started time.Time, err error) error {
	typ, op := verbType(mutating), string(a.Operation)
	ignore := fp != nil && *fp == admissionregistrationv1.Ignore
	if err == nil {
		w.m.observe(name, typ, op, time.Since(started), false, 200)
		return nil
	}
	var callErr *webhookutil.ErrCallingWebhook
	var rejErr *webhookutil.ErrWebhookRejection
	switch {
	case errors.As(err, &callErr):
		code := int(callErr.Status.ErrStatus.Code)
		if !ignore && !errors.Is(callErr.Reason, context.Canceled) {
			w.m.reject(name, typ, op, rejectionCallingWebhook, code)
		}
		w.m.observe(name, typ, op, time.Since(started), !ignore, code)
		if ignore {
			w.m.failOpen.WithLabelValues(name, typ).Inc()
			if ctx.Err() != nil {
				return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
			}
			return nil
		}
		return apierrors.NewInternalError(callErr)
	case errors.As(err, &rejErr):
		code := int(rejErr.Status.ErrStatus.Code)
		w.m.reject(name, typ, op, rejectionNoError, code)
		w.m.observe(name, typ, op, time.Since(started), true, code)
		return rejErr.Status
	default:
		w.m.reject(name, typ, op, rejectionInternal, 0)
		w.m.observe(name, typ, op, time.Since(started), true, 0)
		return err
	}
}
