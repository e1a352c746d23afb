package celpolicy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// TestExplorerRecordsCELPolicies: the decision explorer's record of a request names every
// ValidatingAdmissionPolicy and MutatingAdmissionPolicy that applied or not: the
// denying policy with its binding, its validationActions, the validation that failed and
// its message; a Warn-only binding's failure as Warned with the warning; policies left
// out by their objectSelector, by a binding's matchResources or by a matchCondition,
// each with why; and a mutating policy's change as a JSON Patch with the values it
// replaced.
func TestExplorerRecordsCELPolicies(t *testing.T) {
	src := &source{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Source: src, Default: defaults.Default})))
	ctx := context.Background()

	noLatest := vap("no-latest", nil,
		admissionregistrationv1.Validation{Expression: "object.metadata.name != ''"},
		admissionregistrationv1.Validation{Expression: `!object.spec.containers.exists(c, c.image.endsWith(":latest"))`, Message: "images must be pinned, not :latest"})
	shortNames := vap("short-names", nil, admissionregistrationv1.Validation{Expression: "object.metadata.name.size() < 8", Message: "names should be short"})
	prodOnly := vap("prod-only", nil, admissionregistrationv1.Validation{Expression: "false"})
	prodOnly.Spec.MatchConstraints = podRules.DeepCopy()
	prodOnly.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
	webOnly := vap("web-only", nil, admissionregistrationv1.Validation{Expression: "true"})
	webOnly.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "named-web", Expression: "object.metadata.name == 'web'"}}
	elsewhere := binding("no-latest-elsewhere", "no-latest", nil, admissionregistrationv1.Deny)
	elsewhere.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "other"}},
		ObjectSelector: &metav1.LabelSelector{}}
	tier := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "gold-tier"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: podRules, FailurePolicy: ptr(admissionregistrationv1.Fail),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
			MatchConditions:    []admissionregistrationv1.MatchCondition{{Name: "has-tier", Expression: "'tier' in object.metadata.labels"}},
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
				JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "replace", path: "/metadata/labels/tier", value: "gold"}]`}}}}}
	src.put(celpolicy.Set{
		Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{noLatest, shortNames, prodOnly, webOnly},
		ValidatingBindings: []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			elsewhere,
			binding("no-latest-deny", "no-latest", nil, admissionregistrationv1.Deny),
			binding("short-names-warn", "short-names", nil, admissionregistrationv1.Warn),
			binding("prod-only-b", "prod-only", nil, admissionregistrationv1.Deny),
			binding("web-only-b", "web-only", nil, admissionregistrationv1.Deny),
		},
		Mutating:         []*admissionregistrationv1.MutatingAdmissionPolicy{tier},
		MutatingBindings: []*admissionregistrationv1.MutatingAdmissionPolicyBinding{{ObjectMeta: metav1.ObjectMeta{Name: "gold-tier-b"}, Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "gold-tier"}}},
	})
	record := func(name string) *explorerv1.AdmissionRequest {
		t.Helper()
		raw, err := srv.Client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces/default/pods", name).Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		var pd explorerv1.PodDecisions
		if err := json.Unmarshal(raw, &pd); err != nil {
			t.Fatal(err)
		}
		for _, r := range pd.Records {
			if r.AdmissionRequest != nil {
				return r.AdmissionRequest
			}
		}
		t.Fatalf("no admission record of %s: %s", name, raw)
		return nil
	}
	find := func(ar *explorerv1.AdmissionRequest, name, binding string) explorerv1.PolicyDecision {
		t.Helper()
		for _, d := range ar.Policies {
			if d.Name == name && d.Binding == binding {
				return d
			}
		}
		t.Fatalf("no part of %s (binding %q) in %+v", name, binding, ar.Policies)
		return explorerv1.PolicyDecision{}
	}

	// refused: no-latest denies through its Deny binding, with the failed validation
	_, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod("web", "nginx:latest", map[string]string{"tier": "bronze"}), metav1.CreateOptions{})
	if err == nil {
		t.Fatal("no-latest admitted an image :latest")
	}
	ar := record("web")
	if ar.Allowed || ar.DeniedBy != "no-latest" || !strings.Contains(ar.Message, "images must be pinned, not :latest") {
		t.Fatalf("refused record: allowed %v deniedBy %q message %q", ar.Allowed, ar.DeniedBy, ar.Message)
	}
	d := find(ar, "no-latest", "no-latest-deny")
	if d.Kind != "ValidatingAdmissionPolicy" || d.Verdict != explorerv1.PolicyDenied || d.Message != "images must be pinned, not :latest" ||
		strings.Join(d.ValidationActions, ",") != "Deny" || len(d.Violations) != 1 || d.Violations[0].Field != "spec.validations[1]" ||
		!strings.Contains(d.Violations[0].Expression, `endsWith(":latest")`) {
		t.Errorf("denying policy: %+v", d)
	}
	if d := find(ar, "no-latest", "no-latest-elsewhere"); d.Verdict != explorerv1.PolicySkipped || d.SkipReason != "binding matchResources: namespaceSelector" {
		t.Errorf("binding for another namespace: %+v", d)
	}
	if d := find(ar, "prod-only", ""); d.Verdict != explorerv1.PolicySkipped || d.SkipReason != "matchConstraints: objectSelector" {
		t.Errorf("policy for other objects: %+v", d)
	}
	if d := find(ar, "web-only", "web-only-b"); d.Verdict != explorerv1.PolicyAllowed {
		t.Errorf("matchCondition met: %+v", d)
	}
	// the mutating policy ran first and replaced the label: its patch and the old value
	m := find(ar, "gold-tier", "gold-tier-b")
	if m.Kind != "MutatingAdmissionPolicy" || m.Phase != "Mutating" || m.Verdict != explorerv1.PolicyMutated {
		t.Fatalf("mutating policy: %+v", m)
	}
	var ops []struct {
		Op, Path string
		Value    any
	}
	if err := json.Unmarshal(m.Patch, &ops); err != nil || len(ops) != 1 || ops[0].Op != "replace" || ops[0].Path != "/metadata/labels/tier" || ops[0].Value != "gold" {
		t.Errorf("patch %s (%v)", m.Patch, err)
	}
	if len(m.Before) != 1 || string(m.Before[0]) != `"bronze"` {
		t.Errorf("before %q, want the replaced value \"bronze\"", m.Before)
	}
	// the chain's second pass (the object changed) does not run it again (Never): one entry
	n := 0
	for _, d := range ar.Policies {
		if d.Name == "gold-tier" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("gold-tier has %d entries, want 1 (not reinvoked): %+v", n, ar.Policies)
	}

	// admitted: a long name fails short-names, whose binding only warns; web-only's
	// matchCondition leaves it out
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod("a-long-name", "nginx:1.27", map[string]string{"tier": "bronze"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ar = record("a-long-name")
	if !ar.Allowed || ar.DeniedBy != "" {
		t.Fatalf("admitted record: %+v", ar)
	}
	if d := find(ar, "short-names", "short-names-warn"); d.Verdict != explorerv1.PolicyWarned || d.Message != "names should be short" ||
		len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "with binding 'short-names-warn': names should be short") {
		t.Errorf("Warn-only binding: %+v", d)
	}
	if d := find(ar, "web-only", "web-only-b"); d.Verdict != explorerv1.PolicySkipped || d.SkipReason != "matchConditions: named-web" {
		t.Errorf("matchCondition not met: %+v", d)
	}
	if d := find(ar, "no-latest", "no-latest-deny"); d.Verdict != explorerv1.PolicyAllowed || d.DurationNanos <= 0 {
		t.Errorf("passing policy: %+v", d)
	}
}
