package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	sigsjson "sigs.k8s.io/json"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/upstreamattrs"
)

// reinvokeKey keys the mutating webhooks' reinvocation state in the request's Attributes.
type reinvokeKey struct{}

// reinvokeState is upstream's webhookReinvokeContext: which IfNeeded webhooks ran before
// the object last changed, and what the object was when the webhooks last finished.
type reinvokeState struct {
	lastOutput            runtime.Object
	previouslyReinvocable sets.Set[string]
	reinvoke              sets.Set[string]
}

func (s *reinvokeState) requirePrevious() {
	if s.previouslyReinvocable.Len() > 0 {
		s.reinvoke.Insert(s.previouslyReinvocable.UnsortedList()...)
		s.previouslyReinvocable = sets.New[string]()
	}
}

// Admit implements admission.MutationInterface: the mutating webhooks that match are
// called in order, each with the object as the previous ones left it; a JSONPatch
// answer is applied (then the server's defaults). A webhook that changed the object asks
// the chain for a second mutating pass (admission.Attributes.RequestReinvocation), in
// which only the IfNeeded webhooks that ran before a later change are called again.
func (w *Webhooks) Admit(ctx context.Context, a *admission.Attributes) error {
	mut, _, err := w.configurations(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	hooks, _ := w.mut.hooks(mut, nil)
	if len(hooks) == 0 {
		return nil
	}
	rs, _ := a.State(reinvokeKey{}).(*reinvokeState)
	if rs == nil {
		rs = &reinvokeState{previouslyReinvocable: sets.New[string](), reinvoke: sets.New[string]()}
		a.SetState(reinvokeKey{}, rs)
	}
	if a.IsReinvocation() && !equality.Semantic.DeepEqual(rs.lastOutput, a.Object) {
		rs.requirePrevious()
	}
	round := 0
	if a.IsReinvocation() {
		round = 1
	}
	va := upstreamattrs.Versioned(a)
	if rules.IsExemptAdmissionConfigurationResource(va) {
		return nil
	}
	for i, hook := range hooks {
		inv, serr := w.shouldCall(ctx, hook, va)
		if serr != nil {
			return serr
		}
		if inv == nil {
			continue
		}
		h, ok := hook.GetMutatingWebhook()
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("mutating webhook dispatch requires a MutatingWebhook, got %s", hook.GetType()))
		}
		if a.IsReinvocation() && !rs.reinvoke.Has(hook.GetUID()) {
			continue
		}
		started := time.Now()
		changed, patch, callErr := w.mutate(ctx, h, inv, va, a, round, i)
		if changed {
			rs.requirePrevious()
			a.RequestReinvocation()
		}
		if h.ReinvocationPolicy != nil && *h.ReinvocationPolicy == admissionregistrationv1.IfNeededReinvocationPolicy {
			rs.previouslyReinvocable.Insert(hook.GetUID())
		}
		err := w.outcome(ctx, h.Name, h.FailurePolicy, true, a, started, callErr)
		if a.Recording() {
			d := decision(h.Name, h.FailurePolicy, true, changed, started, callErr, nil, nil)
			if changed {
				d.Patch = patch
			}
			a.RecordDecision(d)
		}
		if err != nil {
			return err
		}
		if callErr != nil {
			a.AddAuditAnnotation(fmt.Sprintf("failed-open.mutation.webhook.admission.k8s.io/round_%d_index_%d", round, i), h.Name)
		}
	}
	if va.Dirty {
		a.BeforeMutation()
		gvk := a.Object.GetObjectKind().GroupVersionKind()
		if err := upstreamattrs.SetInPlace(a.Object, va.VersionedObject.Object()); err != nil {
			return apierrors.NewInternalError(err)
		}
		a.Object.GetObjectKind().SetGroupVersionKind(gvk)
	}
	if a.Object != nil {
		rs.lastOutput = a.Object.DeepCopyObject()
	}
	return nil
}

// mutate calls h and applies its patch to va's object; changed says whether the object
// is now different, patch is the webhook's JSON Patch as it answered (for the decision
// explorer's record).
func (w *Webhooks) mutate(ctx context.Context, h *admissionregistrationv1.MutatingWebhook, inv *generic.WebhookInvocation,
	va *k8sadmission.VersionedAttributes, a *admission.Attributes, round, idx int) (changed bool, patchJSON []byte, err error) {
	defer func() {
		v, _ := json.Marshal(map[string]any{"configuration": inv.Webhook.GetConfigurationName(), "webhook": h.Name, "mutated": changed})
		a.AddAuditAnnotation(fmt.Sprintf("mutation.webhook.admission.k8s.io/round_%d_index_%d", round, idx), string(v))
	}()
	result, err := w.call(ctx, h.Name, h.TimeoutSeconds, h.SideEffects, inv, va, a, true)
	if err != nil || len(result.Patch) == 0 {
		return false, nil, err
	}
	patch, err := jsonpatch.DecodePatch(result.Patch)
	if err != nil {
		return false, nil, &webhookutil.ErrCallingWebhook{WebhookName: h.Name, Reason: fmt.Errorf("received undecodable patch in webhook response: %w", err),
			Status: apierrors.NewServiceUnavailable("error decoding patch in webhook response")}
	}
	if len(patch) == 0 {
		return false, nil, nil
	}
	cur := va.VersionedObject.Object()
	if cur == nil {
		return false, nil, apierrors.NewInternalError(fmt.Errorf("admission webhook %q attempted to modify the object, which is not supported for this operation", h.Name))
	}
	if result.PatchType != admissionv1.PatchTypeJSONPatch {
		return false, nil, &webhookutil.ErrCallingWebhook{WebhookName: h.Name, Reason: fmt.Errorf("unsupported patch type %q", result.PatchType),
			Status: apierrors.NewServiceUnavailable("unsupported patch type in webhook response")}
	}
	js, err := json.Marshal(cur)
	if err != nil {
		return false, nil, apierrors.NewInternalError(err)
	}
	patched, err := patch.Apply(js)
	if err != nil {
		return false, nil, apierrors.NewInternalError(fmt.Errorf("admission webhook %q: apply its patch to %s %q: %w", h.Name, va.GetResource().Resource, va.GetName(), err))
	}
	next, err := decodeLike(cur, patched)
	if err != nil {
		return false, nil, apierrors.NewInternalError(fmt.Errorf("admission webhook %q: its patch left %s %q undecodable: %w", h.Name, va.GetResource().Resource, va.GetName(), err))
	}
	next.GetObjectKind().SetGroupVersionKind(va.VersionedKind)
	changed = !equality.Semantic.DeepEqual(cur, next)
	if w.defaults != nil {
		w.defaults(next)
	}
	va.UpdateObject(next)
	return changed, result.Patch, nil
}

// decodeLike decodes data into a new object of like's type, as upstream's JSON
// serializer does (case-sensitive field names, integers kept as int64).
func decodeLike(like runtime.Object, data []byte) (runtime.Object, error) {
	if _, ok := like.(*unstructured.Unstructured); ok {
		u := &unstructured.Unstructured{}
		return u, u.UnmarshalJSON(data)
	}
	obj, ok := reflect.New(reflect.TypeOf(like).Elem()).Interface().(runtime.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an API object", like)
	}
	return obj, sigsjson.UnmarshalCaseSensitivePreserveInts(data, obj)
}
