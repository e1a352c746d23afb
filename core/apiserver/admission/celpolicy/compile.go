package celpolicy

import (
	"fmt"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// These are upstream's compilePolicy functions of the validating and mutating policy
// plugins (unexported there), written against the same exported compilers: the CEL
// environment, the per-expression cost limits at compile time and the variable,
// matchCondition, validation, messageExpression, auditAnnotation and patch compilation
// are upstream's.

var baseEnv = sync.OnceValue(func() *environment.EnvSet {
	return environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
})

func compileValidating(policy *admissionregistrationv1.ValidatingAdmissionPolicy) validating.Validator {
	hasParam := policy.Spec.ParamKind != nil
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := policy.Spec.FailurePolicy
	compiler, err := plugincel.NewCompositedCompiler(baseEnv())
	if err != nil {
		return recValidator{validating.NewValidator(nil, nil, nil, nil, failurePolicy, err), policy.Name}
	}
	compiler.CompileAndStoreVariables(variables(policy.Spec.Variables), optionalVars, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mc := policy.Spec.MatchConditions; len(mc) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(mc))
		for i := range mc {
			acc[i] = (*matchconditions.MatchCondition)(&mc[i])
		}
		matcher = condMatcher{Matcher: matchconditions.NewMatcher(compiler.CompileCondition(acc, optionalVars, environment.StoredExpressions), failurePolicy, "policy", "validate", policy.Name),
			policy: policy.Name}
	}
	validations := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	audits := make([]plugincel.ExpressionAccessor, len(policy.Spec.AuditAnnotations))
	for i, a := range policy.Spec.AuditAnnotations {
		audits[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	// wrapped for the decision explorer's record (record.go)
	return recValidator{validating.NewValidator(
		compiler.CompileCondition(validations, optionalVars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(audits, optionalVars, environment.StoredExpressions),
		compiler.CompileCondition(messages, expressionOptionalVars, environment.StoredExpressions),
		failurePolicy, nil), policy.Name}
}

func compileMutating(policy *admissionregistrationv1.MutatingAdmissionPolicy) mutating.PolicyEvaluator {
	opts := plugincel.OptionalVariableDeclarations{HasParams: policy.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, err := plugincel.NewCompositedCompiler(baseEnv())
	if err != nil {
		return mutating.PolicyEvaluator{Error: &apiservercel.Error{Type: apiservercel.ErrorTypeInternal, Detail: fmt.Sprintf("failed to initialize CEL compiler: %v", err)}}
	}
	compiler.CompileAndStoreVariables(variables(policy.Spec.Variables), opts, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if mc := policy.Spec.MatchConditions; len(mc) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(mc))
		for i := range mc {
			acc[i] = (*matchconditions.MatchCondition)(&mc[i])
		}
		matcher = condMatcher{Matcher: matchconditions.NewMatcher(compiler.CompileCondition(acc, opts, environment.StoredExpressions), policy.Spec.FailurePolicy, "policy", "validate", policy.Name),
			policy: policy.Name, mutating: true}
	}
	var patchers []patch.Patcher
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for i, m := range policy.Spec.Mutations {
		// wrapped for the decision explorer's record (record.go)
		rec := func(p patch.Patcher) patch.Patcher {
			return recPatcher{Patcher: p, policy: policy.Name, index: i, hasCond: matcher != nil}
		}
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch != nil {
				res := compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)
				patchers = append(patchers, rec(patch.NewJSONPatcher(res)))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration != nil {
				res := compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)
				patchers = append(patchers, rec(patch.NewApplyConfigurationPatcher(res)))
			}
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}

func variables(vs []admissionregistrationv1.Variable) []plugincel.NamedExpressionAccessor {
	out := make([]plugincel.NamedExpressionAccessor, len(vs))
	for i, v := range vs {
		out[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	return out
}
