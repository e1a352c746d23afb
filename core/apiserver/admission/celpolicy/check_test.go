package celpolicy

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCompileErrors: a policy whose CEL does not compile is named field by field, as
// upstream's validation does; one that compiles has none.
func TestCompileErrors(t *testing.T) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Variables: []admissionregistrationv1.Variable{{Name: "n", Expression: "object.metadata.name"}},
			Validations: []admissionregistrationv1.Validation{
				{Expression: "variables.n != 'x'", MessageExpression: "'bad ' + variables.n"},
				{Expression: "object.metadata.name =="},
				{Expression: "params.x == 1"}, // no paramKind: params is not declared
			},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "1"}},
		}}
	errs := CompileErrors(p)
	msg := errs.ToAggregate().Error()
	for _, want := range []string{
		`spec.validations[1].expression: Invalid value: "object.metadata.name ==": compilation failed: ERROR: <input>:1:24: Syntax error`,
		`spec.validations[2].expression: Invalid value: "params.x == 1": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'`,
		`spec.auditAnnotations[0].valueExpression: Invalid value: "1": compilation failed`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nwant %s", msg, want)
		}
	}
	if len(errs) != 3 {
		t.Errorf("%d errors: %s", len(errs), msg)
	}
	m := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: []admissionregistrationv1.Mutation{
			{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration, ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: `Object{metadata: Object.metadata{labels: {"a": "b"}}}`}},
			{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/x", value: nosuch}]`}},
		}}}
	if msg := CompileErrors(m).ToAggregate().Error(); !strings.Contains(msg, "spec.mutations[1].jsonPatch.expression") || strings.Contains(msg, "mutations[0]") {
		t.Errorf("MAP: %s", msg)
	}
}
