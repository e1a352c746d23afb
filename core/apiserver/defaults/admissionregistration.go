package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// admissionRegistration sets upstream's defaults (pkg/apis/admissionregistration/v1
// defaults.go) on webhook configurations and CEL admission policies and bindings:
// failurePolicy Fail, matchPolicy Equivalent, empty namespace and object selectors
// (everything), rule scope "*", webhooks' timeoutSeconds 10 and service port 443,
// reinvocationPolicy Never. It reports whether obj is one of those kinds.
func admissionRegistration(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range o.Webhooks {
			h := &o.Webhooks[i]
			webhook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
			if h.ReinvocationPolicy == nil {
				h.ReinvocationPolicy = ptrTo(admissionregistrationv1.NeverReinvocationPolicy)
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range o.Webhooks {
			h := &o.Webhooks[i]
			webhook(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
		}
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		matchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		matchResources(o.Spec.MatchResources)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		if o.Spec.ReinvocationPolicy == "" {
			o.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
		}
		matchResources(o.Spec.MatchConstraints)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		matchResources(o.Spec.MatchResources)
	default:
		return false
	}
	return true
}

func webhook(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType,
	ns, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *fp == nil {
		*fp = ptrTo(admissionregistrationv1.Fail)
	}
	if *mp == nil {
		*mp = ptrTo(admissionregistrationv1.Equivalent)
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		*timeout = ptrTo(int32(10))
	}
	for i := range rules {
		if rules[i].Scope == nil {
			rules[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		cc.Service.Port = ptrTo(int32(443))
	}
}

func matchResources(m *admissionregistrationv1.MatchResources) {
	if m == nil {
		return
	}
	if m.MatchPolicy == nil {
		m.MatchPolicy = ptrTo(admissionregistrationv1.Equivalent)
	}
	if m.NamespaceSelector == nil {
		m.NamespaceSelector = &metav1.LabelSelector{}
	}
	if m.ObjectSelector == nil {
		m.ObjectSelector = &metav1.LabelSelector{}
	}
	for _, rs := range [][]admissionregistrationv1.NamedRuleWithOperations{m.ResourceRules, m.ExcludeResourceRules} {
		for i := range rs {
			if rs[i].Scope == nil {
				rs[i].Scope = ptrTo(admissionregistrationv1.AllScopes)
			}
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
