// Package webhook calls admission webhooks as upstream's API server does:
// MutatingWebhookConfigurations in the chain's mutating phase and
// ValidatingWebhookConfigurations in its validating phase (docs/admission.md has the
// order). Matching (rules, namespaceSelector, objectSelector, CEL matchConditions), the
// AdmissionReview request and the checks of its response, the REST client (caBundle,
// service or URL) and the webhook accessors are upstream's k8s.io/apiserver libraries;
// this package is the dispatcher that upstream ties to informers and its own admission
// chain, adapted to ours.
package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/generic"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/object"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules"
	"k8s.io/apiserver/pkg/cel/environment"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Config configures Webhooks.
type Config struct {
	// Source of the webhook configurations; nil: the ones the API server serves
	// (Served), read through the reader the server hands over.
	Source Source
	// Registerer takes upstream's webhook metrics; nil: not registered.
	Registerer prometheus.Registerer
	// Default applies the server's defaults to an object a webhook patched, as upstream
	// does after each patch; nil: none.
	Default func(runtime.Object)
	// ServiceRouting says how clientConfig.service is reached: RouteEndpoints (""; an
	// endpoint directly) or RouteClusterIP (the ClusterIP, through the host's node proxy).
	ServiceRouting Routing
}

// Webhooks is an admission plugin (admission.MutationInterface and
// admission.ValidationInterface) that calls the mutating webhooks in Admit and the
// validating ones in Validate.
type Webhooks struct {
	src      Source
	resolver *serviceResolver
	reader   admission.ObjectReader
	cm       *webhookutil.ClientManager
	mut, val accessors
	compiler cel.ConditionCompiler
	objects  object.Matcher
	m        *metrics
	defaults func(runtime.Object)
}

var (
	_ admission.MutationInterface   = (*Webhooks)(nil)
	_ admission.ValidationInterface = (*Webhooks)(nil)
	_ admission.WantsObjectReader   = (*Webhooks)(nil)
)

// New returns the webhook plugin. Services named by clientConfig.service are resolved
// once the server has handed its object reader (SetObjectReader).
func New(cfg Config) (*Webhooks, error) {
	cm, err := webhookutil.NewClientManager([]schema.GroupVersion{admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion},
		admissionv1beta1.AddToScheme, admissionv1.AddToScheme)
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	// No kubeconfig: webhooks are called without client credentials, as upstream without
	// --admission-control-config-file.
	auth, err := webhookutil.NewDefaultAuthenticationInfoResolver("")
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	cm.SetAuthenticationInfoResolver(auth)
	res := &serviceResolver{routing: RouteEndpoints}
	if cfg.ServiceRouting != "" {
		if err := res.setRouting(cfg.ServiceRouting); err != nil {
			return nil, err
		}
	}
	cm.SetServiceResolver(res)
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: metrics: %w", err)
	}
	return &Webhooks{
		src: cfg.Source, resolver: res, cm: &cm, m: m, defaults: cfg.Default,
		compiler: cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())),
	}, nil
}

// SetServiceRouting changes how clientConfig.service is reached (Config.ServiceRouting),
// before the server serves: `wasmkube up`, whose host runs a node proxy, reaches Services
// at their ClusterIP as kube-apiserver does by default.
func (w *Webhooks) SetServiceRouting(r Routing) error { return w.resolver.setRouting(r) }

// SetObjectReader implements admission.WantsObjectReader: namespaces' labels, Services
// and EndpointSlices (and the configurations, when the source is Served) are read from
// the server's watch cache.
func (w *Webhooks) SetObjectReader(r admission.ObjectReader) error {
	w.reader = r
	w.resolver.reader = r
	if w.src == nil {
		w.src = Served{Reader: r}
	}
	return nil
}

func (w *Webhooks) configurations(ctx context.Context) ([]*admissionregistrationv1.MutatingWebhookConfiguration, []*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	if w.src == nil {
		return nil, nil, errors.New("admission webhooks: no source of webhook configurations (the server has not handed its reader)")
	}
	mut, val, err := w.src.Configurations(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("admission webhooks: %w", err)
	}
	return mut, val, nil
}

// shouldCall is upstream's generic.Webhook.ShouldCallHook: the namespace and object
// selectors, the rules and the CEL matchConditions decide whether h sees the request.
// matchPolicy Equivalent also matches the request's resource under another served
// version only through upstream's EquivalentResourceMapper, which needs conversion
// between versions; we serve each group/resource in one version, so Equivalent and Exact
// match the same requests (docs/admission.md).
func (w *Webhooks) shouldCall(ctx context.Context, h webhook.WebhookAccessor, va *k8sadmission.VersionedAttributes) (*generic.WebhookInvocation, *apierrors.StatusError) {
	nsMatch, nsErr := w.matchNamespace(ctx, h, va)
	if !nsMatch && nsErr == nil {
		return nil, nil
	}
	objMatch, objErr := w.objects.MatchObjectSelector(h, va)
	if !objMatch && objErr == nil {
		return nil, nil
	}
	var inv *generic.WebhookInvocation
	for _, r := range h.GetRules() {
		if (&rules.Matcher{Rule: r, Attr: va}).Matches() {
			inv = &generic.WebhookInvocation{Webhook: h, Resource: va.GetResource(), Subresource: va.GetSubresource(), Kind: va.GetKind()}
			break
		}
	}
	if inv == nil {
		return nil, nil
	}
	if nsErr != nil {
		return nil, nsErr
	}
	if objErr != nil {
		return nil, objErr
	}
	if len(h.GetMatchConditions()) > 0 {
		res := h.GetCompiledMatcher(w.compiler).Match(ctx, va, nil, nil)
		if res.Error != nil {
			return nil, apierrors.NewForbidden(va.GetResource().GroupResource(), va.GetName(), res.Error)
		}
		if !res.Matches {
			return nil, nil
		}
	}
	return inv, nil
}

// matchNamespace is upstream's namespace.Matcher over our watch cache: a namespaced
// request matches when its namespace's labels match; a Namespace created or updated
// matches on its own labels; cluster-scoped objects always match.
func (w *Webhooks) matchNamespace(ctx context.Context, h webhook.WebhookAccessor, va *k8sadmission.VersionedAttributes) (bool, *apierrors.StatusError) {
	name := va.GetNamespace()
	isNamespace := va.GetResource().Resource == "namespaces" && va.GetResource().Group == ""
	if name == "" && !isNamespace {
		return true, nil
	}
	sel, err := h.GetParsedNamespaceSelector()
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	if sel.Empty() {
		return true, nil
	}
	if isNamespace && va.GetSubresource() == "" && (va.GetOperation() == k8sadmission.Create || va.GetOperation() == k8sadmission.Update) {
		ns, ok := va.GetObject().(*corev1.Namespace)
		if !ok {
			return false, apierrors.NewInternalError(fmt.Errorf("namespace request carries a %T", va.GetObject()))
		}
		return sel.Matches(labels.Set(ns.Labels)), nil
	}
	if isNamespace {
		name = va.GetName()
	}
	if w.reader == nil {
		return false, apierrors.NewInternalError(errors.New("admission webhooks: the server has not handed its reader"))
	}
	obj, err := w.reader.Get(ctx, "namespaces", "", name)
	if errors.Is(err, admission.ErrNotFound) {
		return false, apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	if err != nil {
		return false, apierrors.NewInternalError(err)
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return false, apierrors.NewInternalError(fmt.Errorf("namespace %s: read a %T", name, obj))
	}
	return sel.Matches(labels.Set(ns.Labels)), nil
}

// dryRunAllowed is upstream's check: a dry-run request may only reach a webhook that
// declares it has no side effects (None, or NoneOnDryRun); one that may have them
// refuses the request (400 "does not support dry run"), whatever its failurePolicy, as
// upstream does, rather than being skipped: a skipped webhook would let the dry run
// admit what the real request is refused.
func dryRunAllowed(name string, se *admissionregistrationv1.SideEffectClass) error {
	if se == nil {
		return &webhookutil.ErrCallingWebhook{WebhookName: name, Reason: errors.New("Webhook SideEffects is nil"), Status: apierrors.NewBadRequest("Webhook SideEffects is nil")}
	}
	if *se == admissionregistrationv1.SideEffectClassNone || *se == admissionregistrationv1.SideEffectClassNoneOnDryRun {
		return nil
	}
	return dryRunUnsupported(name)
}

// verbType is upstream's metric label for the phase.
func verbType(mutating bool) string {
	if mutating {
		return "admit"
	}
	return "validating"
}
