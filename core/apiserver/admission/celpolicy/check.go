package celpolicy

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// CompileErrors compiles every CEL expression of a ValidatingAdmissionPolicy or
// MutatingAdmissionPolicy as upstream's validation does when one is written, with the
// same environment and return types, and names each that does not compile
// (spec.validations[0].expression: Invalid value: "...": compilation failed: ...). Other
// objects have none.
func CompileErrors(obj runtime.Object) field.ErrorList {
	spec := field.NewPath("spec")
	switch p := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
		c, errs := compilerWithVariables(spec, opts, p.Spec.Variables)
		if c == nil {
			return errs
		}
		for i := range p.Spec.MatchConditions {
			errs = append(errs, check(c, spec.Child("matchConditions").Index(i).Child("expression"), (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]), opts)...)
		}
		for i, v := range p.Spec.Validations {
			vp := spec.Child("validations").Index(i)
			errs = append(errs, check(c, vp.Child("expression"), &validating.ValidationCondition{Expression: v.Expression}, opts)...)
			if v.MessageExpression != "" {
				msgOpts := opts
				msgOpts.HasAuthorizer = false
				errs = append(errs, check(c, vp.Child("messageExpression"), &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, msgOpts)...)
			}
		}
		for i, a := range p.Spec.AuditAnnotations {
			errs = append(errs, check(c, spec.Child("auditAnnotations").Index(i).Child("valueExpression"),
				&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts)...)
		}
		return errs
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
		c, errs := compilerWithVariables(spec, opts, p.Spec.Variables)
		if c == nil {
			return errs
		}
		for i := range p.Spec.MatchConditions {
			errs = append(errs, check(c, spec.Child("matchConditions").Index(i).Child("expression"), (*matchconditions.MatchCondition)(&p.Spec.MatchConditions[i]), opts)...)
		}
		patchOpts := opts
		patchOpts.HasPatchTypes = true
		for i, m := range p.Spec.Mutations {
			mp := spec.Child("mutations").Index(i)
			switch {
			case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
				errs = append(errs, check(c, mp.Child("jsonPatch", "expression"), &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts)...)
			case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
				errs = append(errs, check(c, mp.Child("applyConfiguration", "expression"), &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts)...)
			}
		}
		return errs
	}
	return nil
}

func compilerWithVariables(spec *field.Path, opts plugincel.OptionalVariableDeclarations, vars []admissionregistrationv1.Variable) (*plugincel.CompositedCompiler, field.ErrorList) {
	c, err := plugincel.NewCompositedCompiler(baseEnv())
	if err != nil {
		return nil, field.ErrorList{field.InternalError(spec, err)}
	}
	var errs field.ErrorList
	for i, v := range vars {
		res := c.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.StoredExpressions)
		if res.Error != nil {
			errs = append(errs, field.Invalid(spec.Child("variables").Index(i).Child("expression"), v.Expression, failed(res.Error.Detail)))
		}
	}
	return c, errs
}

func check(c *plugincel.CompositedCompiler, p *field.Path, e plugincel.ExpressionAccessor, opts plugincel.OptionalVariableDeclarations) field.ErrorList {
	res := c.CompileCELExpression(e, opts, environment.StoredExpressions)
	if res.Error == nil {
		return nil
	}
	return field.ErrorList{field.Invalid(p, e.GetExpression(), failed(res.Error.Detail))}
}

// failed is upstream's message: "compilation failed: <detail>", once.
func failed(detail string) string {
	if strings.HasPrefix(detail, "compilation failed") {
		return detail
	}
	return "compilation failed: " + detail
}
