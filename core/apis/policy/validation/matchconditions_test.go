package validation_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apis/policy/validation"
)

// TestAdmissionMatchConditions: spec.admission.matchConditions are checked as a
// ValidatingAdmissionPolicy's, every bad field named.
func TestAdmissionMatchConditions(t *testing.T) {
	const base = "spec: {hook: admission.validate, module: {image: 127.0.0.1:5000/p/v:v1}, admission: {rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}], matchConditions: %s}}"
	spec := func(conds string) *policyv1alpha1.WasmPolicySpec {
		p := decode(t, strings.Replace(base, "%s", conds, 1))
		policyv1alpha1.SetDefaults(p)
		return &p.Spec
	}
	ok := spec(`[{name: not-kube-system, expression: "request.namespace != 'kube-system'"}, {name: labelled, expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"}]`)
	if errs := validation.ValidateSpec(ok, field.NewPath("spec")); len(errs) != 0 {
		t.Fatalf("valid matchConditions refused: %v", errs)
	}
	if len(ok.Admission.MatchConditions) != 2 || ok.DeepCopy().Admission.MatchConditions[1].Name != "labelled" {
		t.Fatalf("matchConditions not kept or not copied: %+v", ok.Admission)
	}
	for _, tc := range []struct{ conds, want string }{
		{`[{name: '', expression: 'true'}]`, "spec.admission.matchConditions[0].name: Required value"},
		{`[{name: 'a b', expression: 'true'}]`, "spec.admission.matchConditions[0].name: Invalid value"},
		{`[{name: a, expression: 'true'}, {name: a, expression: 'false'}]`, `spec.admission.matchConditions[1].name: Duplicate value: "a"`},
		{`[{name: a, expression: ' '}]`, "spec.admission.matchConditions[0].expression: Required value"},
		{`[{name: a, expression: 'object.metadata.name'}]`, "spec.admission.matchConditions[0].expression: Invalid value: \"object.metadata.name\": must evaluate to bool"},
		{`[{name: a, expression: 'object.'}]`, "spec.admission.matchConditions[0].expression: Invalid value: \"object.\": compilation failed"},
		{`[{name: a, expression: "authorizer.group('').resource('pods').check('get').allowed()"}]`, "undeclared reference to 'authorizer'"},
	} {
		errs := validation.ValidateSpec(spec(tc.conds), field.NewPath("spec"))
		if !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: want an error containing %q, got %v", tc.conds, tc.want, errs)
		}
	}
	var many []string
	for i := 0; i <= validation.MaxMatchConditions; i++ {
		many = append(many, "{name: c"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26))+", expression: 'true'}")
	}
	if errs := validation.ValidateSpec(spec("["+strings.Join(many, ", ")+"]"), field.NewPath("spec")); !strings.Contains(errs.ToAggregate().Error(), "spec.admission.matchConditions: Too many") {
		t.Errorf("65 matchConditions: %v", errs)
	}
}
