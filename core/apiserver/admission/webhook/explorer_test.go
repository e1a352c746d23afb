package webhook_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// TestExplorerRecordsWebhooks: the decision explorer's record of a request refused by a
// validating webhook names it (deniedBy) with its message and warnings; a mutating
// webhook that changed the object is Mutated, with its JSON Patch and the values it
// replaced (none: it added the labels); a failed call under Ignore is Failed with
// the failurePolicy applied, and the request goes on.
func TestExplorerRecordsWebhooks(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	hs := startHooks(t, map[string]reviewer{
		"/deny": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: "pods named " + req.Name + " are not welcome"},
				Warnings: []string{"deny saw " + req.Name}}
		},
		"/label": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: ptr(admissionv1.PatchTypeJSONPatch), Patch: labelPatch(req, "hooked", "yes")}
		},
	})
	record := func(name string) *explorerv1.AdmissionRequest {
		t.Helper()
		res := c.srv.Client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces/default/pods", name).Do(ctx)
		raw, err := res.Raw()
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
	mh := admissionregistrationv1.MutatingWebhook{Name: "label.example.com", ClientConfig: urlHook(hs, "/label"),
		Rules: vhook("x", urlHook(hs, "/label")).Rules, SideEffects: ptr(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}
	broken := vhook("broken.example.com", admissionregistrationv1.WebhookClientConfig{URL: ptr("https://127.0.0.1:1/nowhere"), CABundle: urlHook(hs, "/deny").CABundle})
	broken.FailurePolicy = ptr(admissionregistrationv1.Ignore)
	c.src.set([]*admissionregistrationv1.MutatingWebhookConfiguration{mutating("label", mh)},
		validating("a-broken", broken), validating("b-deny", vhook("deny.example.com", urlHook(hs, "/deny"))))
	if _, err := c.srv.Client.CoreV1().Pods("default").Create(ctx, pod("web", nil), metav1.CreateOptions{}); err == nil {
		t.Fatal("the deny webhook admitted the pod")
	}
	ar := record("web")
	if ar.Allowed || ar.DeniedBy != "deny.example.com" || !strings.Contains(ar.Message, "pods named web are not welcome") {
		t.Fatalf("record: allowed %v deniedBy %q message %q", ar.Allowed, ar.DeniedBy, ar.Message)
	}
	got := map[string]explorerv1.PolicyDecision{}
	for _, d := range ar.Policies {
		got[d.Name] = d
	}
	if d := got["label.example.com"]; d.Kind != "MutatingWebhook" || d.Verdict != explorerv1.PolicyMutated {
		t.Errorf("mutating webhook: %+v", d)
	}
	// its patch as it answered, and the old values: the pod had no labels
	if d := got["label.example.com"]; !strings.Contains(string(d.Patch), `"path":"/metadata/labels/hooked"`) || len(d.Before) != 2 ||
		string(d.Before[0]) != "null" || string(d.Before[1]) != "null" {
		t.Errorf("mutating webhook's patch %s, before %q", d.Patch, d.Before)
	}
	if d := got["broken.example.com"]; d.Verdict != explorerv1.PolicyFailed || d.FailurePolicy != "Ignore" || d.Failure == "" {
		t.Errorf("failed webhook under Ignore: %+v", d)
	}
	if d := got["deny.example.com"]; d.Kind != "ValidatingWebhook" || d.Verdict != explorerv1.PolicyDenied || len(d.Warnings) != 1 {
		t.Errorf("denying webhook: %+v", d)
	}
}
