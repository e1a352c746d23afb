package validation

import (
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// MaxMatchConditions is upstream's limit on a webhook's or policy's matchConditions.
const MaxMatchConditions = 64

// MatchConditionVars are the CEL variables a wasm policy's matchConditions may use:
// object, oldObject, request and namespaceObject, as a webhook's; no params (a wasm
// policy has args instead) and no authorizer (the admission chain hands plugins none).
var MatchConditionVars = plugincel.OptionalVariableDeclarations{}

var newExpressions = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// ValidateMatchConditions checks matchConditions as upstream checks a
// ValidatingAdmissionPolicy's: each names itself with a qualified name, once; each has an
// expression that compiles, in upstream's CEL environment, to a bool; at most 64.
func ValidateMatchConditions(conds []admissionregistrationv1.MatchCondition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conds) > MaxMatchConditions {
		errs = append(errs, field.TooMany(fld, len(conds), MaxMatchConditions))
	}
	names := sets.New[string]()
	for i, c := range conds {
		p := fld.Index(i)
		if c.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
			if names.Has(c.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names.Insert(c.Name)
		}
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
			continue
		}
		mc := matchconditions.MatchCondition(c)
		if r := newExpressions().CompileCELExpression(&mc, MatchConditionVars, environment.NewExpressions); r.Error != nil {
			errs = append(errs, field.Invalid(p.Child("expression"), c.Expression, r.Error.Error()))
		}
	}
	return errs
}
