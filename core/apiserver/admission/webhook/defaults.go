package webhook

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default sets upstream's defaults (k8s.io/kubernetes pkg/apis/admissionregistration/v1
// defaults.go) on a MutatingWebhookConfiguration or ValidatingWebhookConfiguration:
// failurePolicy Fail, matchPolicy Equivalent, empty namespace and object selectors
// (everything), timeoutSeconds 10, reinvocationPolicy Never, rule scope "*", service
// port 443. Other objects are left alone.
func Default(obj any) {
	switch c := obj.(type) {
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range c.Webhooks {
			h := &c.Webhooks[i]
			defaultCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
			if h.ReinvocationPolicy == nil {
				p := admissionregistrationv1.NeverReinvocationPolicy
				h.ReinvocationPolicy = &p
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range c.Webhooks {
			h := &c.Webhooks[i]
			defaultCommon(&h.FailurePolicy, &h.MatchPolicy, &h.NamespaceSelector, &h.ObjectSelector, &h.TimeoutSeconds, h.Rules, &h.ClientConfig)
		}
	}
}

func defaultCommon(fp **admissionregistrationv1.FailurePolicyType, mp **admissionregistrationv1.MatchPolicyType,
	ns, objSel **metav1.LabelSelector, timeout **int32, rules []admissionregistrationv1.RuleWithOperations, cc *admissionregistrationv1.WebhookClientConfig) {
	if *fp == nil {
		p := admissionregistrationv1.Fail
		*fp = &p
	}
	if *mp == nil {
		p := admissionregistrationv1.Equivalent
		*mp = &p
	}
	if *ns == nil {
		*ns = &metav1.LabelSelector{}
	}
	if *objSel == nil {
		*objSel = &metav1.LabelSelector{}
	}
	if *timeout == nil {
		t := int32(10)
		*timeout = &t
	}
	for i := range rules {
		if rules[i].Scope == nil {
			s := admissionregistrationv1.AllScopes
			rules[i].Scope = &s
		}
	}
	if cc.Service != nil && cc.Service.Port == nil {
		p := int32(443)
		cc.Service.Port = &p
	}
}
