package celpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// The CEL policies' part in the decision explorer's record of a request
// (docs/explorer.md). Upstream's dispatchers report their verdicts only as the refusal's
// text, so a recorded request is explained in two halves:
//   - which policy, binding and param applied, or why not (match constraints, the
//     binding's matchResources, paramRef), is decided again by the same upstream matcher
//     and CollectParams the dispatcher uses (plan): rules and selectors, no CEL;
//   - what the CEL did (matchConditions, each validation's verdict, each mutation's
//     change) is taken from the compiled evaluators, which this package wraps once at
//     compile time (recValidator, condMatcher, recPatcher): they note each call in the
//     request's runs, found in the context, and do nothing else when there are none.
// Nothing of this runs for a request that is not recorded but one context lookup per
// evaluator call.

// runsKey keys a recorded request's runs in the context handed to upstream's dispatcher.
type runsKey struct{}

// runs is what the wrapped evaluators saw in one phase of one recorded request: per
// policy, each invocation in call order.
type runs struct {
	byPolicy map[string][]*run
	// cond is the last matchConditions result of a validating policy, read by
	// recValidator once its Validate returns.
	cond *matchconditions.MatchResult
}

// run is one invocation of a policy (one binding and param).
type run struct {
	param string
	// cond is the matchConditions' result; nil when the policy has none.
	cond *matchconditions.MatchResult
	// result is a validating policy's.
	result validating.ValidateResult
	// patches are a mutating policy's mutations that ran.
	patches []patchRun
	elapsed time.Duration
}

type patchRun struct {
	index int
	ops   []jsonOp
	err   error
}

func withRuns(ctx context.Context, rs *runs) context.Context {
	return context.WithValue(ctx, runsKey{}, rs)
}

func runsFrom(ctx context.Context) *runs {
	rs, _ := ctx.Value(runsKey{}).(*runs)
	return rs
}

func (rs *runs) add(policy string, r *run) {
	if rs.byPolicy == nil {
		rs.byPolicy = map[string][]*run{}
	}
	rs.byPolicy[policy] = append(rs.byPolicy[policy], r)
}

func (rs *runs) last(policy string) *run {
	if l := rs.byPolicy[policy]; len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}

// recValidator notes each Validate call of one validating policy.
type recValidator struct {
	validating.Validator
	policy string
}

func (v recValidator) Validate(ctx context.Context, res schema.GroupVersionResource, va *k8sadmission.VersionedAttributes, params runtime.Object,
	ns *corev1.Namespace, budget int64, authz authorizer.UnconditionalAuthorizer) validating.ValidateResult {
	rs := runsFrom(ctx)
	if rs == nil {
		return v.Validator.Validate(ctx, res, va, params, ns, budget, authz)
	}
	rs.cond = nil
	start := time.Now()
	out := v.Validator.Validate(ctx, res, va, params, ns, budget, authz)
	rs.add(v.policy, &run{cond: rs.cond, result: out, elapsed: time.Since(start)})
	return out
}

// condMatcher notes a policy's matchConditions result; for a mutating policy it starts
// the invocation's run (the dispatcher calls it first).
type condMatcher struct {
	matchconditions.Matcher
	policy   string
	mutating bool
}

func (m condMatcher) Match(ctx context.Context, va *k8sadmission.VersionedAttributes, params runtime.Object, authz authorizer.UnconditionalAuthorizer) matchconditions.MatchResult {
	start := time.Now()
	out := m.Matcher.Match(ctx, va, params, authz)
	if rs := runsFrom(ctx); rs != nil {
		if m.mutating {
			rs.add(m.policy, &run{param: paramKey(params), cond: &out, elapsed: time.Since(start)})
		} else {
			rs.cond = &out
		}
	}
	return out
}

// recPatcher notes each mutation of a mutating policy: the change it made, as JSON
// Patch operations, or its error. The objects are compared here, when the mutation
// returns, because the dispatcher then defaults the result in place.
type recPatcher struct {
	patch.Patcher
	policy  string
	index   int
	hasCond bool
}

func (p recPatcher) Patch(ctx context.Context, req patch.Request, budget int64) (runtime.Object, error) {
	rs := runsFrom(ctx)
	if rs == nil {
		return p.Patcher.Patch(ctx, req, budget)
	}
	start := time.Now()
	var before runtime.Object
	if req.VersionedAttributes != nil {
		before = req.VersionedAttributes.VersionedObject.Object()
	}
	out, err := p.Patcher.Patch(ctx, req, budget)
	elapsed := time.Since(start)
	r := rs.last(p.policy)
	if r == nil || p.index == 0 && (!p.hasCond || len(r.patches) > 0) {
		r = &run{param: paramKey(req.OptionalVariables.VersionedParams)}
		rs.add(p.policy, r)
	}
	pr := patchRun{index: p.index, err: err}
	if err == nil {
		pr.ops = objectDiff(before, out)
	}
	r.patches = append(r.patches, pr)
	r.elapsed += elapsed
	return out, err
}

// paramKey names a param object (namespace/name; "" for none).
func paramKey(o runtime.Object) string {
	if o == nil {
		return ""
	}
	m, err := meta.Accessor(o)
	if err != nil {
		return ""
	}
	if m.GetNamespace() != "" {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return m.GetName()
}

// invocation is one (policy, binding, param) the dispatcher runs, or a policy or binding
// it leaves out, with why (skip) or the configuration error it reports (failure).
type invocation struct {
	policy, binding, param string
	actions                []string
	skip, failure          string
}

// plan is the dispatcher's matching, done again for the record: the policies in the
// hooks' order, each binding, each param.
func plan[P, B runtime.Object, E generic.Evaluator](pm generic.PolicyMatcher, a k8sadmission.Attributes, o k8sadmission.ObjectInterfaces,
	hooks []generic.PolicyHook[P, B, E], pacc func(P) generic.PolicyAccessor, bacc func(B) generic.BindingAccessor, actions func(B) []string) []invocation {
	var out []invocation
	for _, h := range hooks {
		pa := pacc(h.Policy)
		name := pa.GetName()
		ok, _, _, err := pm.DefinitionMatches(a, o, pa)
		switch {
		case err != nil:
			out = append(out, invocation{policy: name, failure: fmt.Sprintf("failed to configure policy: %v", err)})
			continue
		case !ok:
			out = append(out, invocation{policy: name, skip: "matchConstraints: " + whyNot(pm, a, o, pa.GetMatchConstraints())})
			continue
		case h.ConfigurationError != nil:
			out = append(out, invocation{policy: name, failure: fmt.Sprintf("failed to configure policy: %v", h.ConfigurationError)})
			continue
		}
		for _, b := range h.Bindings {
			ba := bacc(b)
			inv := invocation{policy: name, binding: ba.GetName(), actions: actions(b)}
			ok, err := pm.BindingMatches(a, o, ba)
			switch {
			case err != nil:
				inv.failure = fmt.Sprintf("failed to configure binding: %v", err)
				out = append(out, inv)
				continue
			case !ok:
				inv.skip = "binding matchResources: " + whyNot(pm, a, o, ba.GetMatchResources())
				out = append(out, inv)
				continue
			}
			params, err := generic.CollectParams(pa.GetParamKind(), h.ParamInformer, h.ParamScope, ba.GetParamRef(), a.GetNamespace(), nil, nil)
			switch {
			case err != nil:
				inv.failure = fmt.Sprintf("failed to configure binding: %v", err)
				out = append(out, inv)
				continue
			case len(params) == 0:
				inv.skip = "paramRef: no param object found (parameterNotFoundAction Allow)"
				out = append(out, inv)
				continue
			}
			for _, p := range params {
				inv.param = paramKey(p)
				out = append(out, inv)
			}
		}
	}
	return out
}

// whyNot names the part of mr that left the request out: excludeResourceRules,
// resourceRules, objectSelector or namespaceSelector, found by matching again with
// the selectors opened up one at a time.
func whyNot(pm generic.PolicyMatcher, a k8sadmission.Attributes, o k8sadmission.ObjectInterfaces, mr *admissionregistrationv1.MatchResources) string {
	if mr == nil || mr.NamespaceSelector == nil || mr.ObjectSelector == nil {
		return "not set"
	}
	matches := func(m admissionregistrationv1.MatchResources) bool {
		pol := &admissionregistrationv1.ValidatingAdmissionPolicy{Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: &m}}
		ok, _, _, err := pm.DefinitionMatches(a, o, validating.NewValidatingAdmissionPolicyAccessor(pol))
		return ok && err == nil
	}
	open := *mr
	open.NamespaceSelector, open.ObjectSelector = &metav1.LabelSelector{}, &metav1.LabelSelector{}
	if !matches(open) {
		open.ExcludeResourceRules = nil
		if matches(open) {
			return "excludeResourceRules"
		}
		return "resourceRules"
	}
	open.ObjectSelector = mr.ObjectSelector
	if !matches(open) {
		return "objectSelector"
	}
	return "namespaceSelector"
}

func failurePolicy(fp *admissionregistrationv1.FailurePolicyType) string {
	if fp == nil {
		return string(admissionregistrationv1.Fail)
	}
	return string(*fp)
}

// planned is the decision of an invocation that did not run (skipped or failed to
// configure).
func planned(kind, phase string, inv invocation, fp *admissionregistrationv1.FailurePolicyType) explorerv1.PolicyDecision {
	d := explorerv1.PolicyDecision{Name: inv.policy, Kind: kind, Phase: phase, Binding: inv.binding, Param: inv.param,
		ValidationActions: inv.actions, Verdict: explorerv1.PolicySkipped, SkipReason: inv.skip}
	if inv.failure != "" {
		d.Verdict, d.SkipReason, d.Failure, d.FailurePolicy = explorerv1.PolicyFailed, "", inv.failure, failurePolicy(fp)
	}
	return d
}

// recordValidating records each validating policy's part: invocations and runs are in
// the same order (the dispatcher calls Validate once per binding and param that apply).
func recordValidating(a *admission.Attributes, hooks []validating.PolicyHook, invs []invocation, rs *runs) {
	pols := map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{}
	for _, h := range hooks {
		pols[h.Policy.Name] = h.Policy
	}
	next := map[string]int{}
	for _, inv := range invs {
		pol := pols[inv.policy]
		if inv.skip != "" || inv.failure != "" {
			a.RecordDecision(planned("ValidatingAdmissionPolicy", "Validating", inv, pol.Spec.FailurePolicy))
			continue
		}
		l := rs.byPolicy[inv.policy]
		i := next[inv.policy]
		if i >= len(l) {
			// not reached: the dispatcher stopped before (the namespace could not be read)
			continue
		}
		next[inv.policy] = i + 1
		a.RecordDecision(validatingDecision(pol, inv, l[i]))
	}
}

// validatingDecision is one validating invocation's verdict, as the dispatcher applies
// the binding's validationActions to it.
func validatingDecision(pol *admissionregistrationv1.ValidatingAdmissionPolicy, inv invocation, r *run) explorerv1.PolicyDecision {
	d := explorerv1.PolicyDecision{Name: inv.policy, Kind: "ValidatingAdmissionPolicy", Phase: "Validating", Binding: inv.binding,
		Param: inv.param, ValidationActions: inv.actions, Verdict: explorerv1.PolicyAllowed, DurationNanos: r.elapsed.Nanoseconds()}
	if r.cond != nil && r.cond.Error == nil && !r.cond.Matches {
		d.Verdict, d.SkipReason = explorerv1.PolicySkipped, "matchConditions: "+r.cond.FailedConditionName
		return d
	}
	decisions := r.result.Decisions
	perValidation := len(decisions) == len(pol.Spec.Validations)
	failed, denied := false, false
	for i, dec := range decisions {
		v := explorerv1.Violation{Field: "spec", Message: dec.Message}
		if perValidation {
			v.Field = fmt.Sprintf("spec.validations[%d]", i)
			v.Expression = pol.Spec.Validations[i].Expression
		}
		switch dec.Evaluation {
		case validating.EvalError:
			failed = true
			d.Violations = append(d.Violations, v)
			if d.Failure == "" {
				d.Failure = dec.Message
				d.FailurePolicy = string(admissionregistrationv1.Fail)
				if dec.Action == validating.ActionAdmit {
					d.FailurePolicy = string(admissionregistrationv1.Ignore)
				}
			}
		case validating.EvalDeny:
			denied = true
			d.Violations = append(d.Violations, v)
			if d.Message == "" {
				d.Message = dec.Message
			}
		}
	}
	has := func(act admissionregistrationv1.ValidationAction) bool {
		for _, x := range inv.actions {
			if x == string(act) {
				return true
			}
		}
		return false
	}
	switch {
	case failed:
		d.Verdict = explorerv1.PolicyFailed
	case denied && has(admissionregistrationv1.Deny):
		d.Verdict = explorerv1.PolicyDenied
	case denied && has(admissionregistrationv1.Warn):
		d.Verdict = explorerv1.PolicyWarned
	case denied:
		d.Verdict = explorerv1.PolicyAudited
	}
	if denied && has(admissionregistrationv1.Warn) {
		for _, v := range d.Violations {
			d.Warnings = append(d.Warnings, fmt.Sprintf("Validation failed for ValidatingAdmissionPolicy '%s' with binding '%s': %s", inv.policy, inv.binding, v.Message))
		}
	}
	for _, an := range r.result.AuditAnnotations {
		if an.Action == validating.AuditAnnotationActionPublish {
			if d.AuditAnnotations == nil {
				d.AuditAnnotations = map[string]string{}
			}
			d.AuditAnnotations[inv.policy+"/"+an.Key] = an.Value
		}
	}
	return d
}

// recordMutating records each mutating policy's part. An invocation that applies may
// not run: on the chain's second pass only the policies with reinvocationPolicy
// IfNeeded run again; its run is found by its param, in order. The second pass records
// only the invocations that ran again (the first said why the others did not apply).
func recordMutating(a *admission.Attributes, hooks []mutatingHook, invs []invocation, rs *runs) {
	pols := map[string]*admissionregistrationv1.MutatingAdmissionPolicy{}
	for _, h := range hooks {
		pols[h.Policy.Name] = h.Policy
	}
	again := a.IsReinvocation()
	next := map[string]int{}
	for _, inv := range invs {
		pol := pols[inv.policy]
		if inv.skip != "" || inv.failure != "" {
			if !again {
				a.RecordDecision(planned("MutatingAdmissionPolicy", "Mutating", inv, pol.Spec.FailurePolicy))
			}
			continue
		}
		l := rs.byPolicy[inv.policy]
		i := next[inv.policy]
		if i >= len(l) || l[i].param != inv.param {
			if !again {
				// the dispatcher stopped before it (an error of an earlier policy)
				d := planned("MutatingAdmissionPolicy", "Mutating", inv, pol.Spec.FailurePolicy)
				d.SkipReason = "not run: the dispatch stopped before it"
				a.RecordDecision(d)
			}
			continue
		}
		next[inv.policy] = i + 1
		if again && len(l[i].patches) == 0 && (l[i].cond == nil || l[i].cond.Error == nil && l[i].cond.Matches) {
			// its matchConditions ran, then the dispatcher left it out: not to be reinvoked
			continue
		}
		a.RecordDecision(mutatingDecision(pol, inv, l[i]))
	}
}

func mutatingDecision(pol *admissionregistrationv1.MutatingAdmissionPolicy, inv invocation, r *run) explorerv1.PolicyDecision {
	d := explorerv1.PolicyDecision{Name: inv.policy, Kind: "MutatingAdmissionPolicy", Phase: "Mutating", Binding: inv.binding,
		Param: inv.param, Verdict: explorerv1.PolicyAllowed, DurationNanos: r.elapsed.Nanoseconds()}
	if r.cond != nil {
		if r.cond.Error != nil {
			d.Verdict, d.Failure, d.FailurePolicy = explorerv1.PolicyFailed, r.cond.Error.Error(), failurePolicy(pol.Spec.FailurePolicy)
			d.Violations = []explorerv1.Violation{{Field: "spec.matchConditions", Message: r.cond.Error.Error()}}
			return d
		}
		if !r.cond.Matches {
			d.Verdict, d.SkipReason = explorerv1.PolicySkipped, "matchConditions: "+r.cond.FailedConditionName
			return d
		}
	}
	var ops []jsonOp
	for _, pr := range r.patches {
		if pr.err != nil {
			v := explorerv1.Violation{Field: fmt.Sprintf("spec.mutations[%d]", pr.index), Message: pr.err.Error()}
			if pr.index < len(pol.Spec.Mutations) {
				v.Expression = mutationExpression(pol.Spec.Mutations[pr.index])
			}
			d.Violations = append(d.Violations, v)
			if d.Failure == "" {
				d.Verdict, d.Failure, d.FailurePolicy = explorerv1.PolicyFailed, pr.err.Error(), failurePolicy(pol.Spec.FailurePolicy)
			}
			continue
		}
		ops = append(ops, pr.ops...)
	}
	if len(ops) > 0 {
		if b, err := json.Marshal(ops); err == nil {
			d.Patch = b
			if d.Verdict == explorerv1.PolicyAllowed {
				d.Verdict = explorerv1.PolicyMutated
			}
		}
	}
	return d
}

func mutationExpression(m admissionregistrationv1.Mutation) string {
	switch {
	case m.JSONPatch != nil:
		return m.JSONPatch.Expression
	case m.ApplyConfiguration != nil:
		return m.ApplyConfiguration.Expression
	}
	return ""
}

func validationActions(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) []string {
	out := make([]string, len(b.Spec.ValidationActions))
	for i, x := range b.Spec.ValidationActions {
		out[i] = string(x)
	}
	return out
}

func noActions(*admissionregistrationv1.MutatingAdmissionPolicyBinding) []string { return nil }
