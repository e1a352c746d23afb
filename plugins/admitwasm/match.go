package admitwasm

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"

	policyvalidation "github.com/wasmkube/wasmkube/core/apis/policy/validation"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/upstreamattrs"
)

// matcher decides whether a policy sees a request: one of its rules, both selectors,
// and its CEL matchConditions.
type matcher struct {
	rules      []Rule
	namespaces labels.Selector // nil: every namespace
	objects    labels.Selector // nil: every object
	// conditions are upstream's matchConditions matcher (nil: none), compiled once per
	// policy; it applies the policy's failurePolicy to an expression that fails.
	conditions matchconditions.Matcher
}

// conditionCompiler is upstream's CEL environment for matchConditions, built once (its
// environments are costly to make).
var conditionCompiler = sync.OnceValue(func() plugincel.ConditionCompiler {
	return plugincel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

func newMatcher(spec *PolicySpec) matcher {
	m := matcher{rules: spec.Rules}
	if s := selector(spec.NamespaceSelector); !s.Empty() {
		m.namespaces = s
	}
	if s := selector(spec.ObjectSelector); !s.Empty() {
		m.objects = s
	}
	if len(spec.MatchConditions) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(spec.MatchConditions))
		for i := range spec.MatchConditions {
			mc := matchconditions.MatchCondition(spec.MatchConditions[i])
			acc[i] = &mc
		}
		fp := admissionregistrationv1.FailurePolicyType(spec.FailurePolicy)
		m.conditions = matchconditions.NewMatcher(conditionCompiler().CompileCondition(acc, policyvalidation.MatchConditionVars, environment.StoredExpressions),
			&fp, "policy", "wasm", spec.Name)
	}
	return m
}

// ruleMatches reports whether a rule names the request's operation, group, version and
// resource, with the subresource semantics of upstream's webhook rules.
func ruleMatches(r *Rule, a *admission.Attributes) bool {
	return anyOf(r.Operations, string(a.Operation)) && anyOf(r.APIGroups, a.Resource.Group) &&
		anyOf(r.APIVersions, a.Resource.Version) && resourceMatches(r.Resources, a.Resource.Resource, a.Subresource)
}

func anyOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func resourceMatches(list []string, res, sub string) bool {
	for _, r := range list {
		main, rsub, hasSub := strings.Cut(r, "/")
		if main != "*" && main != res {
			continue
		}
		switch {
		case !hasSub:
			if sub == "" {
				return true
			}
		case rsub == "*":
			if sub != "" || main == "*" {
				return true
			}
		case rsub == sub:
			return true
		}
	}
	return false
}

// matches reports whether the policy sees the request: its rules and selectors, then its
// matchConditions, which are evaluated only for a request the others let through (as
// upstream's webhooks). nsLabels reads a namespace's labels (for namespaced objects with
// a namespaceSelector). An error is a matchCondition that failed to evaluate under
// failurePolicy Fail (upstream's: a false condition wins over another's error; under
// Ignore the policy is skipped); the request is refused with it.
func (m *matcher) matches(ctx context.Context, a *admission.Attributes, nsLabels func(ctx context.Context, ns string) labels.Set) (bool, error) {
	if !m.selects(ctx, a, nsLabels) {
		return false, nil
	}
	if m.conditions == nil {
		return true, nil
	}
	res := m.conditions.Match(ctx, upstreamattrs.Versioned(a), nil, nil)
	if res.Error != nil {
		return false, res.Error
	}
	return res.Matches, nil
}

// MatchConditionError is a matchCondition of a policy that failed to evaluate, under
// failurePolicy Fail.
type MatchConditionError struct {
	Policy string
	Err    error
}

func (e *MatchConditionError) Error() string {
	return fmt.Sprintf("admission policy %s: failed to evaluate match condition: %v", e.Policy, e.Err)
}

func (e *MatchConditionError) Unwrap() error { return e.Err }

// matchConditionRefusal is how the API server answers a MatchConditionError: 500, as a
// webhook's failed call under Fail.
func matchConditionRefusal(policy string, err error) error {
	return apierrors.NewInternalError(&MatchConditionError{Policy: policy, Err: err})
}

// selects reports whether one of the rules and both selectors take the request.
func (m *matcher) selects(ctx context.Context, a *admission.Attributes, nsLabels func(ctx context.Context, ns string) labels.Set) bool {
	ok := false
	for i := range m.rules {
		if ruleMatches(&m.rules[i], a) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if m.objects != nil && !objectLabelsMatch(m.objects, a) {
		return false
	}
	if m.namespaces == nil {
		return true
	}
	// As upstream: a Namespace is matched by its own labels; other cluster-scoped
	// objects are not subject to the namespace selector.
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		return objectLabelsMatch(m.namespaces, a)
	}
	if a.Namespace == "" {
		return true
	}
	return m.namespaces.Matches(nsLabels(ctx, a.Namespace))
}

// objectLabelsMatch: the new or the stored object matches (upstream's objectSelector
// rule, so that a label removal or a DELETE is still seen).
func objectLabelsMatch(sel labels.Selector, a *admission.Attributes) bool {
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		m := metaOf(o)
		if m != nil && !reflect.ValueOf(m).IsNil() && sel.Matches(labels.Set(m.GetLabels())) {
			return true
		}
	}
	return false
}
