// Package celpolicy serves ValidatingAdmissionPolicy and MutatingAdmissionPolicy (with
// their bindings and params) in our admission chain with upstream's CEL admission
// libraries from k8s.io/apiserver: the policy matcher, the param collection, the
// validating and mutating dispatchers (Deny/Warn/Audit, messageExpression,
// auditAnnotations, failurePolicy, reinvocation) and the CEL environment with its cost
// limits are theirs. This package gives them what upstream's plugin gets from informers
// and its admission chain: the policies, the params and the namespaces from the API
// server's watch cache, and our request as upstream's attributes.
package celpolicy

import (
	"context"
	"reflect"
	"sort"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/informers"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/upstreamattrs"
	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
)

// Config configures Policies.
type Config struct {
	// Source of the policies; nil: the ones the API server serves (Served).
	Source Source
	// Default applies the server's defaults to an object a mutating policy changed, as
	// upstream does after each mutation; nil: none.
	Default func(runtime.Object)
}

// Policies is an admission plugin: Admit runs the MutatingAdmissionPolicies, Validate
// the ValidatingAdmissionPolicies.
type Policies struct {
	src    Source
	reader admission.ObjectReader
	ns     *upstreamattrs.Namespaces
	o      k8sadmission.ObjectInterfaces
	pm     generic.PolicyMatcher
	vdisp  generic.Dispatcher[validating.PolicyHook]
	mdisp  generic.Dispatcher[mutating.PolicyHook]

	mu sync.Mutex
	vc map[*admissionregistrationv1.ValidatingAdmissionPolicy]validating.Validator
	mc map[*admissionregistrationv1.MutatingAdmissionPolicy]mutating.PolicyEvaluator
}

var (
	_ admission.MutationInterface   = (*Policies)(nil)
	_ admission.ValidationInterface = (*Policies)(nil)
	_ admission.WantsObjectReader   = (*Policies)(nil)
)

// New returns the CEL policy plugin; it needs the server's object reader
// (SetObjectReader) before the first request.
func New(cfg Config) *Policies {
	// upstream's matcher asks its client only for a namespace its lister says does not
	// exist, which ours never says (upstreamattrs.Namespaces): no client
	ns := &upstreamattrs.Namespaces{}
	m := matching.NewMatcher(ns, nil)
	def := cfg.Default
	if def == nil {
		def = func(runtime.Object) {}
	}
	s := fieldmanager.Scheme
	pm := generic.NewPolicyMatcher(m)
	return &Policies{
		src: cfg.Source, ns: ns, pm: pm,
		o: &k8sadmission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: defaulter(def),
			ObjectConvertor: convertor{s}, EquivalentResourceMapper: runtime.NewEquivalentResourceRegistry()},
		// No authorizer: expressions that use `authorizer` are refused at compile time by
		// upstream's environment only when declared; at run time they see none (docs).
		vdisp: validating.NewDispatcher(nil, pm),
		mdisp: mutating.NewDispatcher(nil, m, typeConverters{}),
		vc:    map[*admissionregistrationv1.ValidatingAdmissionPolicy]validating.Validator{},
		mc:    map[*admissionregistrationv1.MutatingAdmissionPolicy]mutating.PolicyEvaluator{},
	}
}

// SetObjectReader implements admission.WantsObjectReader.
func (p *Policies) SetObjectReader(r admission.ObjectReader) error {
	p.reader = r
	p.ns.Reader = r
	if p.src == nil {
		p.src = Served{Reader: r}
	}
	return nil
}

// Validate implements admission.ValidationInterface: a policy being written must
// compile (as upstream's validation requires), then the ValidatingAdmissionPolicies run.
func (p *Policies) Validate(ctx context.Context, a *admission.Attributes) error {
	if (a.Operation == admission.Create || a.Operation == admission.Update) && a.Subresource == "" && a.Object != nil {
		if errs := CompileErrors(a.Object); len(errs) > 0 {
			return apierrors.NewInvalid(a.Kind.GroupKind(), a.Name, errs)
		}
	}
	set, err := p.policies(ctx)
	if err != nil {
		return err
	}
	hooks := p.validatingHooks(set)
	if len(hooks) == 0 {
		return nil
	}
	va := upstreamattrs.Versioned(a)
	ctx = warning.WithWarningRecorder(ctx, warnings{a})
	if !a.Recording() {
		return p.vdisp.Dispatch(ctx, va.Attributes, p.o, hooks)
	}
	invs := plan(p.pm, va.Attributes, p.o, hooks, validating.NewValidatingAdmissionPolicyAccessor, validating.NewValidatingAdmissionPolicyBindingAccessor, validationActions)
	rs := &runs{}
	err = p.vdisp.Dispatch(withRuns(ctx, rs), va.Attributes, p.o, hooks)
	recordValidating(a, hooks, invs, rs)
	return err
}

// Admit implements admission.MutationInterface.
func (p *Policies) Admit(ctx context.Context, a *admission.Attributes) error {
	set, err := p.policies(ctx)
	if err != nil {
		return err
	}
	hooks := p.mutatingHooks(set)
	if len(hooks) == 0 || a.Object == nil {
		return nil
	}
	va := upstreamattrs.Versioned(a)
	ctx = warning.WithWarningRecorder(ctx, warnings{a})
	if a.Recording() {
		// matched before the dispatch, which changes va's object
		invs := plan(p.pm, va.Attributes, p.o, hooks, mutating.NewMutatingAdmissionPolicyAccessor, mutating.NewMutatingAdmissionPolicyBindingAccessor, noActions)
		rs := &runs{}
		ctx = withRuns(ctx, rs)
		defer recordMutating(a, hooks, invs, rs)
	}
	if err := p.mdisp.Dispatch(ctx, va.Attributes, p.o, hooks); err != nil {
		return err
	}
	if a.ReinvocationRequested() || a.IsReinvocation() {
		a.BeforeMutation()
		// a policy changed the versioned copy (upstream converts its result into the
		// request's object): bring it into ours, keeping its TypeMeta as it was
		gvk := a.Object.GetObjectKind().GroupVersionKind()
		if err := upstreamattrs.SetInPlace(a.Object, va.Attributes.GetObject()); err != nil {
			return apierrors.NewInternalError(err)
		}
		a.Object.GetObjectKind().SetGroupVersionKind(gvk)
	}
	return nil
}

func (p *Policies) policies(ctx context.Context) (Set, error) {
	if p.src == nil || p.reader == nil {
		return Set{}, apierrors.NewInternalError(errNoReader)
	}
	set, err := p.src.Policies(ctx)
	if err != nil {
		return Set{}, apierrors.NewInternalError(err)
	}
	return set, nil
}

// validatingHooks are upstream's policy hooks: each policy (by name) with its bindings,
// its compiled validator (kept while the policy object is the same) and its params'
// source; a paramKind the server does not serve is a configuration error that the
// policy's failurePolicy judges.
func (p *Policies) validatingHooks(set Set) []validating.PolicyHook {
	p.mu.Lock()
	defer p.mu.Unlock()
	return hooksOf(p.reader, set.Validating, set.ValidatingBindings, &p.vc,
		func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string { return b.Spec.PolicyName },
		compileValidating,
		func(pol *admissionregistrationv1.ValidatingAdmissionPolicy, bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, ev validating.Validator, ps paramSourceOf) validating.PolicyHook {
			h := validating.PolicyHook{Policy: pol, Bindings: bs, Evaluator: ev}
			if pk := pol.Spec.ParamKind; pk != nil {
				h.ParamInformer, h.ParamScope, h.ConfigurationError = ps(pk)
			}
			return h
		})
}

// mutatingHooks are validatingHooks' twins for the MutatingAdmissionPolicies; a policy
// that did not compile is a configuration error too.
func (p *Policies) mutatingHooks(set Set) []mutating.PolicyHook {
	p.mu.Lock()
	defer p.mu.Unlock()
	return hooksOf(p.reader, set.Mutating, set.MutatingBindings, &p.mc,
		func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string { return b.Spec.PolicyName },
		compileMutating,
		func(pol *admissionregistrationv1.MutatingAdmissionPolicy, bs []*admissionregistrationv1.MutatingAdmissionPolicyBinding, ev mutating.PolicyEvaluator, ps paramSourceOf) mutating.PolicyHook {
			h := mutating.PolicyHook{Policy: pol, Bindings: bs, Evaluator: ev, ConfigurationError: ev.Error}
			if pk := pol.Spec.ParamKind; pk != nil {
				var err error
				if h.ParamInformer, h.ParamScope, err = ps(pk); err != nil {
					h.ConfigurationError = err
				}
			}
			return h
		})
}

type mutatingHook = mutating.PolicyHook

// paramSourceOf finds a paramKind's objects (paramSource over the server's reader).
type paramSourceOf func(*admissionregistrationv1.ParamKind) (informers.GenericInformer, meta.RESTScope, error)

// hooksOf is what both kinds of policy do to become upstream's hooks: the policies in
// name order, each with its bindings (a policy without one is left out), its evaluator
// taken from cache while the policy object is the same (else compiled), and the hook
// made by hook. The cache is replaced by the evaluators of this set, so a deleted or
// changed policy's evaluator is dropped. The caller holds the cache's lock.
func hooksOf[P interface {
	*admissionregistrationv1.ValidatingAdmissionPolicy | *admissionregistrationv1.MutatingAdmissionPolicy
	GetName() string
}, B any, E any, H any](reader admission.ObjectReader, policies []P, bindings []B, cache *map[P]E,
	policyName func(B) string, compile func(P) E, hook func(P, []B, E, paramSourceOf) H) []H {
	if len(policies) == 0 || len(bindings) == 0 {
		return nil
	}
	byPolicy := map[string][]B{}
	for _, b := range bindings {
		byPolicy[policyName(b)] = append(byPolicy[policyName(b)], b)
	}
	pols := append([]P(nil), policies...)
	sort.Slice(pols, func(i, j int) bool { return pols[i].GetName() < pols[j].GetName() })
	ps := func(pk *admissionregistrationv1.ParamKind) (informers.GenericInformer, meta.RESTScope, error) {
		return paramSource(reader, pk)
	}
	next := make(map[P]E, len(pols))
	var hooks []H
	for _, pol := range pols {
		ev, ok := (*cache)[pol]
		if !ok {
			ev = compile(pol)
		}
		next[pol] = ev
		if bs := byPolicy[pol.GetName()]; len(bs) > 0 {
			hooks = append(hooks, hook(pol, bs, ev, ps))
		}
	}
	*cache = next
	return hooks
}

// warnings records upstream's context warnings (Warn actions) as the request's.
type warnings struct{ a *admission.Attributes }

func (w warnings) AddWarning(_, text string) { w.a.AddWarning(text) }

type defaulter func(runtime.Object)

func (d defaulter) Default(o runtime.Object) { d(o) }

// convertor is the scheme's, but copies between two objects of one Go type: upstream's
// dispatcher converts its result into the request's object, which for us is the same
// version (the scheme has no conversion from a type to itself).
type convertor struct{ *runtime.Scheme }

func (c convertor) Convert(in, out, ctx any) error {
	if reflect.TypeOf(in) == reflect.TypeOf(out) {
		if ino, ok := in.(runtime.Object); ok {
			if outo, ok := out.(runtime.Object); ok {
				return upstreamattrs.SetInPlace(outo, ino.DeepCopyObject())
			}
		}
	}
	return c.Scheme.Convert(in, out, ctx)
}

// typeConverters gives every kind the built-in schemas of server-side apply (for
// ApplyConfiguration mutations; JSONPatch needs none).
type typeConverters struct{}

func (typeConverters) GetTypeConverter(schema.GroupVersionKind) managedfields.TypeConverter {
	return fieldmanager.BuiltinTypeConverter()
}
func (typeConverters) Run(context.Context) {}
