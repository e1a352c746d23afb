package validation

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validWebhookConfig() *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "check.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hooks"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}}}
}

// TestValidateAdmissionRegistration: upstream's rules and field paths for webhook
// configurations and CEL policy bindings.
func TestValidateAdmissionRegistration(t *testing.T) {
	if errs := Validate(validWebhookConfig()); len(errs) != 0 {
		t.Fatalf("valid configuration: %v", errs)
	}
	for name, tc := range map[string]struct {
		edit func(h *admissionregistrationv1.ValidatingWebhook)
		want string
	}{
		"short name":      {func(h *admissionregistrationv1.ValidatingWebhook) { h.Name = "check" }, "webhooks[0].name: Invalid value"},
		"no side effects": {func(h *admissionregistrationv1.ValidatingWebhook) { h.SideEffects = nil }, "webhooks[0].sideEffects: Required value"},
		"side effects": {func(h *admissionregistrationv1.ValidatingWebhook) {
			h.SideEffects = ptr.To(admissionregistrationv1.SideEffectClassSome)
		}, "webhooks[0].sideEffects: Unsupported value"},
		"review versions": {func(h *admissionregistrationv1.ValidatingWebhook) { h.AdmissionReviewVersions = []string{"v2"} }, "must include at least one of v1, v1beta1"},
		"url and service": {func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.URL = ptr.To("https://x") }, "exactly one of url or service is required"},
		"http url": {func(h *admissionregistrationv1.ValidatingWebhook) {
			h.ClientConfig.Service = nil
			h.ClientConfig.URL = ptr.To("http://x")
		}, "webhooks[0].clientConfig.url"},
		"timeout":      {func(h *admissionregistrationv1.ValidatingWebhook) { h.TimeoutSeconds = ptr.To(int32(31)) }, "between 1 and 30 seconds"},
		"bad caBundle": {func(h *admissionregistrationv1.ValidatingWebhook) { h.ClientConfig.CABundle = []byte("nonsense") }, "webhooks[0].clientConfig.caBundle"},
		"empty condition": {func(h *admissionregistrationv1.ValidatingWebhook) {
			h.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "c"}}
		}, "webhooks[0].matchConditions[0].expression: Required value"},
	} {
		c := validWebhookConfig()
		tc.edit(&c.Webhooks[0])
		if errs := Validate(c); !strings.Contains(errs.ToAggregate().Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, errs, tc.want)
		}
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "p",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Warn},
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "x"}}}
	msg := Validate(b).ToAggregate().Error()
	for _, want := range []string{"spec.validationActions: Invalid value", "must not contain both Deny and Warn", "spec.paramRef.parameterNotFoundAction: Required value"} {
		if !strings.Contains(msg, want) {
			t.Errorf("binding: %s, want %q", msg, want)
		}
	}
}
