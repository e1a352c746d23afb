package wasmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

const celPolicies = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: require-team}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
    namespaceSelector: {matchLabels: {env: prod}}
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    messageExpression: "'pods \"' + object.metadata.name + '\" must carry label team'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: require-team}
spec: {policyName: require-team, validationActions: [Deny]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-owner}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{labels: {"owner": "platform"}}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-owner}
spec: {policyName: add-owner}
`

// TestReplayAdmissionCEL: a recording replayed against a file of a ValidatingAdmissionPolicy
// and a MutatingAdmissionPolicy reports, per policy, the refusal (the namespace's labels
// read from the recorded namespace) and the change, as for wasm policies.
func TestReplayAdmissionCEL(t *testing.T) {
	if !wasmtest.IsCELPolicies([]byte(celPolicies)) || wasmtest.IsCELPolicies([]byte("admission:\n  policies: []\n")) {
		t.Fatal("IsCELPolicies does not tell a policy file from a config")
	}
	set, err := wasmtest.CELPolicies("policies.yaml", []byte(celPolicies))
	if err != nil {
		t.Fatal(err)
	}
	raw := func(o any) json.RawMessage { b, _ := json.Marshal(o); return b }
	pod := func(ns, name string) *wasmtest.Record {
		p := &v1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
		return &wasmtest.Record{Admission: &wasmtest.AdmissionRecord{Operation: "CREATE", APIVersion: "v1", Resource: "pods", Kind: "Pod",
			Namespace: ns, Name: name, Object: raw(p)}}
	}
	ns := &v1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}}
	recs := []wasmtest.Record{
		{Object: &wasmtest.ObjectRecord{APIVersion: "v1", Resource: "namespaces", Kind: "Namespace", Name: "shop", Object: raw(ns)}},
		*pod("shop", "web"), *pod("default", "other"),
	}
	rep, err := wasmtest.ReplayAdmission(context.Background(), recs, set, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wasmtest.WriteAdmissionReplay(&out, rep)
	text := out.String()
	if rep.Requests != 2 || rep.Refused != 1 || rep.RefusedByPolicy["ValidatingAdmissionPolicy/require-team"] != 1 ||
		!strings.Contains(text, `pods "web" must carry label team`) {
		t.Fatalf("want shop/web refused by the VAP\n%s", text)
	}
	if rep.ChangedByPolicy["MutatingAdmissionPolicy/add-owner"] != 1 || !strings.Contains(text, "metadata.labels") {
		t.Fatalf("want default/other changed by the MAP\n%s", text)
	}
	if _, err := wasmtest.CELPolicies("bad.yaml", []byte(strings.Replace(celPolicies, "'team' in object.metadata.labels", "'team' in", 1))); err == nil ||
		!strings.Contains(err.Error(), `bad.yaml: ValidatingAdmissionPolicy "require-team"`) || !strings.Contains(err.Error(), "spec.validations[0].expression") {
		t.Fatalf("a policy that does not compile: %v", err)
	}
}
