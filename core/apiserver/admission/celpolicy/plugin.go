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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/warning"

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
	return &Policies{
		src: cfg.Source, ns: ns,
		o: &k8sadmission.RuntimeObjectInterfaces{ObjectCreater: s, ObjectTyper: s, ObjectDefaulter: defaulter(def),
			ObjectConvertor: convertor{s}, EquivalentResourceMapper: runtime.NewEquivalentResourceRegistry()},
		// No authorizer: expressions that use `authorizer` are refused at compile time by
		// upstream's environment only when declared; at run time they see none (docs).
		vdisp: validating.NewDispatcher(nil, generic.NewPolicyMatcher(m)),
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
	return p.vdisp.Dispatch(warning.WithWarningRecorder(ctx, warnings{a}), va.Attributes, p.o, hooks)
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
	if err := p.mdisp.Dispatch(warning.WithWarningRecorder(ctx, warnings{a}), va.Attributes, p.o, hooks); err != nil {
		return err
	}
	if a.ReinvocationRequested() || a.IsReinvocation() {
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
	if len(set.Validating) == 0 || len(set.ValidatingBindings) == 0 {
		return nil
	}
	bindings := map[string][]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, b := range set.ValidatingBindings {
		bindings[b.Spec.PolicyName] = append(bindings[b.Spec.PolicyName], b)
	}
	pols := append([]*admissionregistrationv1.ValidatingAdmissionPolicy(nil), set.Validating...)
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[*admissionregistrationv1.ValidatingAdmissionPolicy]validating.Validator{}
	var hooks []validating.PolicyHook
	for _, pol := range pols {
		ev, ok := p.vc[pol]
		if !ok {
			ev = compileValidating(pol)
		}
		next[pol] = ev
		bs := bindings[pol.Name]
		if len(bs) == 0 {
			continue
		}
		h := validating.PolicyHook{Policy: pol, Bindings: bs, Evaluator: ev}
		if pk := pol.Spec.ParamKind; pk != nil {
			h.ParamInformer, h.ParamScope, h.ConfigurationError = paramSource(p.reader, pk)
		}
		hooks = append(hooks, h)
	}
	p.vc = next
	return hooks
}

func (p *Policies) mutatingHooks(set Set) []mutating.PolicyHook {
	if len(set.Mutating) == 0 || len(set.MutatingBindings) == 0 {
		return nil
	}
	bindings := map[string][]*admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for _, b := range set.MutatingBindings {
		bindings[b.Spec.PolicyName] = append(bindings[b.Spec.PolicyName], b)
	}
	pols := append([]*admissionregistrationv1.MutatingAdmissionPolicy(nil), set.Mutating...)
	sort.Slice(pols, func(i, j int) bool { return pols[i].Name < pols[j].Name })
	p.mu.Lock()
	defer p.mu.Unlock()
	next := map[*admissionregistrationv1.MutatingAdmissionPolicy]mutating.PolicyEvaluator{}
	var hooks []mutating.PolicyHook
	for _, pol := range pols {
		ev, ok := p.mc[pol]
		if !ok {
			ev = compileMutating(pol)
		}
		next[pol] = ev
		bs := bindings[pol.Name]
		if len(bs) == 0 {
			continue
		}
		h := mutating.PolicyHook{Policy: pol, Bindings: bs, Evaluator: ev}
		if ev.Error != nil {
			h.ConfigurationError = ev.Error
		}
		if pk := pol.Spec.ParamKind; pk != nil {
			var err error
			h.ParamInformer, h.ParamScope, err = paramSource(p.reader, pk)
			if err != nil {
				h.ConfigurationError = err
			}
		}
		hooks = append(hooks, h)
	}
	p.mc = next
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
