package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// TestWebhookPatchSeenByWasmPolicy: the chain is the server's (docs/admission.md): wasm
// mutating policies, then mutating webhooks; validation; wasm validating policies, then
// validating webhooks. A mutating webhook's label reaches the wasm validating policy
// that requires it, and its change reinvokes the wasm mutating policy.
func TestWebhookPatchSeenByWasmPolicy(t *testing.T) {
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: h, Config: []byte(`
admission:
  policies:
  - name: add-annotation
    path: ` + wasmbuild.WAT(t, "plugins/admitwasm/testdata/add-annotation.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
  - name: require-team
    path: ` + wasmbuild.WAT(t, "plugins/admitwasm/testdata/require-team.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close(context.Background()) })
	c := startCluster(t, pol)
	hs := startHooks(t, map[string]reviewer{
		"/team": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: ptr(admissionv1.PatchTypeJSONPatch), Patch: labelPatch(req, "team", "hooks")}
		},
	})
	m := mhook("team.example.com", urlHook(hs, "/team"))
	m.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"give-team": "yes"}}
	c.src.set([]*admissionregistrationv1.MutatingWebhookConfiguration{mutating("team", m)})

	cs := c.srv.Client
	p, err := cs.CoreV1().Pods("default").Create(ctx, pod("teamed", map[string]string{"give-team": "yes"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the wasm policy did not see the webhook's label: %v", err)
	}
	if p.Labels["team"] != "hooks" || p.Annotations["mutated-by"] != "add-annotation" {
		t.Errorf("labels %v annotations %v", p.Labels, p.Annotations)
	}
	reqs := hs.requests("/team")
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Object.Raw), `"mutated-by":"add-annotation"`) {
		t.Errorf("the webhook did not see the wasm mutating policy's annotation (%d calls)", len(reqs))
	}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("teamless", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pods "teamless" must carry label team`) {
		t.Fatalf("without the webhook: %v", err)
	}
}
