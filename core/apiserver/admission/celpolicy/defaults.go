package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Default sets upstream's defaults (k8s.io/kubernetes pkg/apis/admissionregistration/v1
// defaults.go) on a Validating- or MutatingAdmissionPolicy or binding: failurePolicy Fail,
// and in matchConstraints and matchResources matchPolicy Equivalent, empty namespace and
// object selectors (everything) and rule scope "*"; a MutatingAdmissionPolicy's
// reinvocationPolicy Never. Other objects are left alone.
func Default(obj any) {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		defaultMatch(o.Spec.MatchConstraints)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		defaultMatch(o.Spec.MatchResources)
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		if o.Spec.FailurePolicy == nil {
			o.Spec.FailurePolicy = ptrTo(admissionregistrationv1.Fail)
		}
		if o.Spec.ReinvocationPolicy == "" {
			o.Spec.ReinvocationPolicy = admissionregistrationv1.NeverReinvocationPolicy
		}
		defaultMatch(o.Spec.MatchConstraints)
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		defaultMatch(o.Spec.MatchResources)
	}
}

func defaultMatch(m *admissionregistrationv1.MatchResources) {
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
