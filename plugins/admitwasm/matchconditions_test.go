package admitwasm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// TestMatchConditions: a wasm policy bound with a ValidatingAdmissionPolicy's
// matchConditions, through the real API server. A policy whose condition is false is
// skipped (a pod without the team label is admitted); true, it runs (refused). A
// condition that fails to evaluate (a label read without has()) follows failurePolicy as
// upstream: Fail refuses the request with 500 naming the policy, Ignore skips the policy.
func TestMatchConditions(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: team-outside-sandbox
    path: @require-team@
    `+podRule+`
    matchConditions:
    - {name: not-sandbox, expression: "request.namespace != 'sandbox'"}
    - {name: not-exempt, expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)"}
  - name: strict-fail
    path: @require-team@
    `+podRule+`
    objectSelector: {matchLabels: {probe: fail}}
    matchConditions:
    - {name: tier, expression: "object.metadata.labels['tier'] == 'web'"}
  - name: strict-ignore
    path: @require-team@
    `+podRule+`
    failurePolicy: Ignore
    objectSelector: {matchLabels: {probe: ignore}}
    matchConditions:
    - {name: tier, expression: "object.metadata.labels['tier'] == 'web'"}
`)
	ctx := context.Background()
	cs := c.srv.Client
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sandbox"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(ns, name string, labels map[string]string) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		return err
	}
	// conditions true: the policy runs and refuses a pod without team
	if err := create("default", "no-team", nil); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must carry label team") {
		t.Fatalf("a pod without team in default (both conditions true): %v", err)
	}
	// a condition false: the policy is skipped
	if err := create("sandbox", "no-team", nil); err != nil {
		t.Fatalf("a pod without team in sandbox (not-sandbox false): %v", err)
	}
	if err := create("default", "exempt", map[string]string{"exempt": "yes"}); err != nil {
		t.Fatalf("an exempt pod (not-exempt false): %v", err)
	}
	// tier is missing: the expression fails to evaluate ("no such key"), which under
	// Fail refuses the request
	err := create("default", "probe-fail", map[string]string{"probe": "fail", "team": "a"})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "admission policy strict-fail: failed to evaluate match condition") {
		t.Fatalf("a matchCondition that fails to evaluate under Fail: %v", err)
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Code != 500 {
		t.Fatalf("want 500, got %v", err)
	}
	// ... and under Ignore skips the policy: admitted without team (exempt from the first)
	if err := create("default", "probe-ignore", map[string]string{"probe": "ignore", "exempt": "yes"}); err != nil {
		t.Fatalf("a matchCondition that fails to evaluate under Ignore: %v", err)
	}
	// where it evaluates, the Fail policy runs: true and refused for no team
	err = create("default", "probe-web", map[string]string{"probe": "fail", "tier": "web", "exempt": "yes"})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must carry label team") {
		t.Fatalf("tier web, no team, under strict-fail: %v", err)
	}
}

// TestMatchConditionsConfigErrors: the file tier checks matchConditions as the API tier
// does, naming the field.
func TestMatchConditionsConfigErrors(t *testing.T) {
	const policy = `
admission:
  policies:
  - name: p
    path: /p.wasm
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    matchConditions: `
	for _, tc := range []struct{ conds, want string }{
		{`[{name: a, expression: "object.metadata.name"}]`, "admission.policies[0].matchConditions[0].expression: Invalid value"},
		{`[{name: a, expression: "true"}, {name: a, expression: "true"}]`, "admission.policies[0].matchConditions[1].name: Duplicate value"},
		{`[{name: a, expr: "true"}]`, "admission.policies[0].matchConditions[0].expr: unknown field"},
	} {
		_, err := admitwasm.ParseConfig([]byte(policy + tc.conds))
		var ce *admitwasm.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want a ConfigError containing %q, got %v", tc.conds, tc.want, err)
		}
	}
	cfg, err := admitwasm.ParseConfig([]byte(policy + `[{name: a, expression: "request.namespace != 'x'"}]`))
	if err != nil || len(cfg.Policies[0].MatchConditions) != 1 {
		t.Fatalf("a valid matchCondition: %v %+v", err, cfg)
	}
}

// TestAPITierMatchConditions: a WasmPolicy's spec.admission.matchConditions bind its
// policy as the config file's do; one that does not compile keeps the policy out, with
// the field named.
func TestAPITierMatchConditions(t *testing.T) {
	c := startCluster(t, "")
	wp := apiPolicy(t, "team-api", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeEnforce, "require-team.wat")
	wp.Spec.Admission.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "labelled-enforce", Expression: "has(object.metadata.labels) && 'enforce' in object.metadata.labels"}}
	if errs := c.pol.ApplyPolicies([]*wasmpolicy.Policy{wp}); len(errs) > 0 {
		t.Fatal(errs)
	}
	ctx := context.Background()
	create := func(name string, labels map[string]string) error {
		_, err := c.srv.Client.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		return err
	}
	if err := create("free", nil); err != nil {
		t.Fatalf("a pod the matchCondition leaves out: %v", err)
	}
	if err := create("enforced", map[string]string{"enforce": "yes"}); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "must carry label team") {
		t.Fatalf("a pod the matchCondition takes, without team: %v", err)
	}
	bad := apiPolicy(t, "bad-api", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeEnforce, "require-team.wat")
	bad.Spec.Admission.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "n", Expression: "object.metadata.name"}}
	errs := c.pol.ApplyPolicies([]*wasmpolicy.Policy{wp, bad})
	if err := errs["bad-api"]; err == nil || !strings.Contains(err.Error(), "spec.admission.matchConditions[0].expression") {
		t.Fatalf("a WasmPolicy whose matchCondition is not a bool: %v", errs)
	}
}
