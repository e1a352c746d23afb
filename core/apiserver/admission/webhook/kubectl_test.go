package webhook_test

import (
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/webhook"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// TestKubectlServedAdmission: with the real kubectl, the admissionregistration.k8s.io/v1
// kinds are served, defaulted and validated, and the chain reads them as they are
// applied: a ValidatingWebhookConfiguration refuses a pod with its webhook's message, a
// ValidatingAdmissionPolicy with a ConfigMap param refuses and warns, a
// MutatingAdmissionPolicy adds a label.
func TestKubectlServedAdmission(t *testing.T) {
	hooks, err := webhook.New(webhook.Config{Default: defaults.Default})
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(celpolicy.New(celpolicy.Config{Default: defaults.Default}), hooks))
	hs := startHooks(t, map[string]reviewer{
		"/deny": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			if !strings.HasPrefix(req.Name, "hooked") {
				return &admissionv1.AdmissionResponse{Allowed: true}
			}
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: "the webhook says no to " + req.Name}}
		},
	})
	dir := t.TempDir()
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...).CombinedOutput()
		return string(out), err
	}
	apply := func(name, yaml string) string {
		t.Helper()
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := kubectl("apply", "-f", f)
		if err != nil {
			t.Fatalf("apply %s: %v\n%s", name, err, out)
		}
		return out
	}
	apply("hook.yaml", `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: deny-hooked}
webhooks:
- name: deny.hooks.example.com
  clientConfig: {url: "`+hs.URL+`/deny", caBundle: `+base64.StdEncoding.EncodeToString(hs.CA)+`}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  sideEffects: None
  admissionReviewVersions: [v1]
`)
	if out, _ := kubectl("get", "validatingwebhookconfiguration", "deny-hooked", "-o", "jsonpath={.webhooks[0].failurePolicy} {.webhooks[0].timeoutSeconds} {.webhooks[0].matchPolicy}"); out != "Fail 10 Equivalent" {
		t.Errorf("defaults: %q", out)
	}
	pod := func(name string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: default}\nspec: {containers: [{name: c, image: busybox}]}\n"
	}
	f := filepath.Join(dir, "pod.yaml")
	_ = os.WriteFile(f, []byte(pod("hooked-1")), 0o600)
	if out, err := kubectl("apply", "-f", f); err == nil || !strings.Contains(out, `admission webhook "deny.hooks.example.com" denied the request: the webhook says no to hooked-1`) {
		t.Fatalf("pod through the served webhook: %v\n%s", err, out)
	}

	apply("vap.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: limits, namespace: default}
data: {banned: "evil/"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-banned-images}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  validations:
  - expression: "object.spec.containers.all(c, !c.image.startsWith(params.data.banned))"
    messageExpression: "'image ' + object.spec.containers[0].image + ' is banned'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: no-banned-images}
spec:
  policyName: no-banned-images
  validationActions: [Deny]
  paramRef: {name: limits, namespace: default, parameterNotFoundAction: Deny}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: add-label}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration: {expression: 'Object{metadata: Object.metadata{labels: {"admitted-by": "map"}}}'}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: add-label}
spec: {policyName: add-label}
`)
	_ = os.WriteFile(f, []byte(strings.Replace(pod("bad"), "busybox", "evil/miner", 1)), 0o600)
	var out string
	for i := 0; i < 50; i++ { // the watch cache delivers the applied objects
		if out, err = kubectl("apply", "-f", f); err != nil {
			break
		}
		_, _ = kubectl("delete", "pod", "bad", "-n", "default", "--wait=false")
	}
	if err == nil || !strings.Contains(out, "ValidatingAdmissionPolicy 'no-banned-images' with binding 'no-banned-images' denied request: image evil/miner is banned") {
		t.Fatalf("pod through the served VAP: %v\n%s", err, out)
	}
	_ = os.WriteFile(f, []byte(pod("good")), 0o600)
	if out, err := kubectl("apply", "-f", f); err != nil {
		t.Fatalf("good pod: %v\n%s", err, out)
	}
	if out, _ := kubectl("get", "pod", "good", "-n", "default", "-o", "jsonpath={.metadata.labels.admitted-by}"); out != "map" {
		t.Errorf("the MAP's label: %q", out)
	}

	// bad input is refused naming the field
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad
  clientConfig: {url: "http://example.com"}
  admissionReviewVersions: [v1]
`), 0o600)
	out, err = kubectl("apply", "-f", bad)
	for _, want := range []string{"webhooks[0].name", "webhooks[0].sideEffects", "webhooks[0].clientConfig.url"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("bad configuration: %v, want %q in\n%s", err, want, out)
		}
	}
}
