package admissionpolicystatus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller/admissionpolicystatus"
)

// TestTypeChecking: a policy whose expression compares a Deployment's spec.replicas (an
// integer in the served OpenAPI schema) with a string gets upstream's type-checking
// warning in its status, for its generation; a correct one gets none.
func TestTypeChecking(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(srv.Client, 0)
	c, err := admissionpolicystatus.New(srv.Client, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	go c.Run(ctx, 1)

	rules := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}}
	vaps := srv.Client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	for name, expr := range map[string]string{"wrong": "object.spec.replicas > 'three'", "right": "object.spec.replicas <= 3"} {
		if _, err := vaps.Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{MatchConstraints: rules,
				Validations: []admissionregistrationv1.Validation{{Expression: expr}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string) *admissionregistrationv1.ValidatingAdmissionPolicy {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // the controller's pace, not a measured figure
		for {
			p, err := vaps.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !admissionpolicystatus.NeedsCheck(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("policy %s: status never type-checked: %+v", name, p.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wrong := status("wrong")
	w := wrong.Status.TypeChecking.ExpressionWarnings
	if len(w) != 1 || w[0].FieldRef != "spec.validations[0].expression" || !strings.Contains(w[0].Warning, "apps/v1, Kind=Deployment") || !strings.Contains(w[0].Warning, "no matching overload") {
		t.Errorf("warnings of the wrong policy: %+v", w)
	}
	if wrong.Status.ObservedGeneration != wrong.Generation {
		t.Errorf("observedGeneration %d, generation %d", wrong.Status.ObservedGeneration, wrong.Generation)
	}
	if w := status("right").Status.TypeChecking.ExpressionWarnings; len(w) != 0 {
		t.Errorf("warnings of the right policy: %+v", w)
	}
}
