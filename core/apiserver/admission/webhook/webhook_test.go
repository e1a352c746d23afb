package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWebhooks runs upstream's webhook behaviours against one API server and test
// webhook servers on loopback (clientConfig.url, TLS verified against caBundle).
func TestWebhooks(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	hs := startHooks(t, map[string]reviewer{
		"/deny": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{Code: 403, Message: "pods named " + req.Name + " are not welcome"},
				Warnings: []string{"deny saw " + req.Name}, AuditAnnotations: map[string]string{"verdict": "denied"}}
		},
		"/warn": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"warn saw " + req.Name}, AuditAnnotations: map[string]string{"seen": req.Name}}
		},
		"/hang": func(r *http.Request, _ *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			<-r.Context().Done() // until the API server gives up (timeoutSeconds)
			return nil
		},
		"/label": func(_ *http.Request, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
			return &admissionv1.AdmissionResponse{Allowed: true, PatchType: ptr(admissionv1.PatchTypeJSONPatch), Patch: labelPatch(req, "hooked", "yes")}
		},
		"/allow": allow,
	})
	pods := func(warnings *[]string) func(p *corev1.Pod) (*corev1.Pod, error) {
		cs := c.client(t, warnings)
		return func(p *corev1.Pod) (*corev1.Pod, error) {
			return cs.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		}
	}

	t.Run("refusal, warnings and audit annotations", func(t *testing.T) {
		c.src.set(nil, validating("a-warn", vhook("warn.example.com", urlHook(hs, "/warn"))),
			validating("b-deny", vhook("deny.example.com", urlHook(hs, "/deny"))))
		var warnings []string
		_, err := pods(&warnings)(pod("web", nil))
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `admission webhook "deny.example.com" denied the request: pods named web are not welcome`) {
			t.Fatalf("create: %v", err)
		}
		if strings.Join(warnings, "|") != "warn saw web|deny saw web" {
			t.Errorf("warnings %q", warnings)
		}
		c.src.set(nil, validating("a-warn", vhook("warn.example.com", urlHook(hs, "/warn"))))
		if _, err := pods(&warnings)(pod("web", nil)); err != nil {
			t.Fatal(err)
		}
		if got := c.rec.get()["warn.example.com/seen"]; got != "web" {
			t.Errorf("audit annotations %v", c.rec.get())
		}
		if n := counter(t, c.reg, "apiserver_admission_webhook_rejection_count", "deny.example.com", "validating", "CREATE", "no_error", "403"); n != 1 {
			t.Errorf("rejection count %v", n)
		}
	})

	t.Run("timeout under Fail and Ignore", func(t *testing.T) {
		h := vhook("hang.example.com", urlHook(hs, "/hang"))
		h.TimeoutSeconds = ptr(int32(1))
		c.src.set(nil, validating("hang", h))
		var warnings []string
		_, err := pods(&warnings)(pod("slow-fail", nil))
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `failed calling webhook "hang.example.com"`) {
			t.Fatalf("Fail: %v", err)
		}
		h.FailurePolicy = ptr(admissionregistrationv1.Ignore)
		c.src.set(nil, validating("hang", h))
		if _, err := pods(&warnings)(pod("slow-ignore", nil)); err != nil {
			t.Fatalf("Ignore: %v", err)
		}
		if got := c.rec.get()["failed-open.validating.webhook.admission.k8s.io/round_0_index_0"]; got != "hang.example.com" {
			t.Errorf("audit annotations %v", c.rec.get())
		}
		if n := counter(t, c.reg, "apiserver_admission_webhook_fail_open_count", "hang.example.com", "validating"); n != 1 {
			t.Errorf("fail open count %v", n)
		}
	})

	t.Run("service without endpoints", func(t *testing.T) {
		cs := c.client(t, new([]string))
		if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nobody"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		h := vhook("nobody.example.com", admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "nobody"}, CABundle: hs.CA})
		c.src.set(nil, validating("nobody", h))
		_, err := pods(new([]string))(pod("orphan-fail", nil))
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), `no endpoints available for service "nobody"`) {
			t.Fatalf("Fail: %v", err)
		}
		h.FailurePolicy = ptr(admissionregistrationv1.Ignore)
		c.src.set(nil, validating("nobody", h))
		if _, err := pods(new([]string))(pod("orphan-ignore", nil)); err != nil {
			t.Fatalf("Ignore: %v", err)
		}
	})

	t.Run("patch, reinvocation", func(t *testing.T) {
		// "a-again" (IfNeeded) runs before "b-label" patches: it is called a second
		// time, with the label; "c-never" (Never) after the patch is not.
		again := mhook("again.example.com", urlHook(hs, "/allow"))
		again.ReinvocationPolicy = ptr(admissionregistrationv1.IfNeededReinvocationPolicy)
		c.src.set([]*admissionregistrationv1.MutatingWebhookConfiguration{
			mutating("a-again", again),
			mutating("b-label", mhook("label.example.com", urlHook(hs, "/label"))),
			mutating("c-never", mhook("never.example.com", urlHook(hs, "/warn"))),
		})
		before := hs.count("/allow")
		p, err := pods(new([]string))(pod("patched", map[string]string{"app": "web"}))
		if err != nil {
			t.Fatal(err)
		}
		if p.Labels["hooked"] != "yes" || p.Labels["app"] != "web" {
			t.Errorf("labels %v", p.Labels)
		}
		if n := hs.count("/allow") - before; n != 2 {
			t.Fatalf("the IfNeeded webhook was called %d times, want 2", n)
		}
		reqs := hs.requests("/allow")
		if last := string(reqs[len(reqs)-1].Object.Raw); !strings.Contains(last, `"hooked":"yes"`) {
			t.Errorf("the reinvoked webhook did not see the patch: %s", last)
		}
		if got := c.rec.get()["mutation.webhook.admission.k8s.io/round_0_index_1"]; !strings.Contains(got, `"mutated":true`) {
			t.Errorf("audit annotations %v", c.rec.get())
		}
		// nothing changes after it: called once
		c.src.set([]*admissionregistrationv1.MutatingWebhookConfiguration{mutating("a-again", again)})
		before = hs.count("/allow")
		if _, err := pods(new([]string))(pod("unpatched", nil)); err != nil {
			t.Fatal(err)
		}
		if n := hs.count("/allow") - before; n != 1 {
			t.Errorf("without a later change the IfNeeded webhook was called %d times, want 1", n)
		}
	})

	t.Run("dry run and side effects", func(t *testing.T) {
		none := vhook("none.example.com", urlHook(hs, "/allow"))
		c.src.set(nil, validating("none", none))
		before := len(hs.requests("/allow"))
		cs := c.client(t, new([]string))
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		reqs := hs.requests("/allow")
		if len(reqs) != before+1 || reqs[len(reqs)-1].DryRun == nil || !*reqs[len(reqs)-1].DryRun {
			t.Fatalf("the None webhook was not called with dryRun: %d calls", len(reqs)-before)
		}
		some := vhook("some.example.com", urlHook(hs, "/deny"))
		some.SideEffects = ptr(admissionregistrationv1.SideEffectClassSome)
		c.src.set(nil, validating("some", some))
		calls := hs.count("/deny")
		_, err := cs.CoreV1().Pods("default").Create(ctx, pod("dry", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "some.example.com" does not support dry run`) {
			t.Fatalf("dry run through a webhook with side effects: %v", err)
		}
		if hs.count("/deny") != calls {
			t.Error("a webhook with side effects was called for a dry run")
		}
	})

	t.Run("selectors and matchConditions", func(t *testing.T) {
		h := vhook("deny.example.com", urlHook(hs, "/deny"))
		h.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
		h.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{"default"}}}}
		h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-exempt", Expression: `!object.metadata.name.startsWith("exempt-")`}}
		c.src.set(nil, validating("sel", h))
		if _, err := pods(new([]string))(pod("unchecked", nil)); err != nil {
			t.Errorf("object selector: %v", err)
		}
		if _, err := pods(new([]string))(pod("exempt-a", map[string]string{"checked": "yes"})); err != nil {
			t.Errorf("matchConditions: %v", err)
		}
		if _, err := pods(new([]string))(pod("checked", map[string]string{"checked": "yes"})); !apierrors.IsForbidden(err) {
			t.Errorf("matching pod: %v", err)
		}
		h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: `object.metadata.nosuchfield == "x"`}}
		c.src.set(nil, validating("sel", h))
		if _, err := pods(new([]string))(pod("checked-2", map[string]string{"checked": "yes"})); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "no such key: nosuchfield") {
			t.Errorf("failing matchCondition under Fail: %v", err)
		}
	})

	if n := testutil.CollectAndCount(c.reg, "apiserver_admission_webhook_admission_duration_seconds"); n == 0 {
		t.Error("no apiserver_admission_webhook_admission_duration_seconds series")
	}
}
