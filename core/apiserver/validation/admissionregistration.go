package validation

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
)

// validateAdmissionRegistration checks webhook configurations and CEL admission policies
// and bindings with upstream's rules (pkg/apis/admissionregistration/validation) and
// messages; the webhook URL, service and caBundle checks are upstream's own functions.
// CEL expressions are compiled when the policy is used, not here (docs/admission.md).
func validateAdmissionRegistration(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		names := sets.New[string]()
		for i, h := range o.Webhooks {
			p := field.NewPath("webhooks").Index(i)
			errs = append(errs, validateWebhook(p, h.Name, names, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector,
				h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions)...)
		}
		return errs, true
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		names := sets.New[string]()
		for i, h := range o.Webhooks {
			p := field.NewPath("webhooks").Index(i)
			errs = append(errs, validateWebhook(p, h.Name, names, h.ClientConfig, h.Rules, h.FailurePolicy, h.MatchPolicy, h.NamespaceSelector,
				h.ObjectSelector, h.SideEffects, h.TimeoutSeconds, h.AdmissionReviewVersions, h.MatchConditions)...)
			if rp := h.ReinvocationPolicy; rp != nil && *rp != admissionregistrationv1.NeverReinvocationPolicy && *rp != admissionregistrationv1.IfNeededReinvocationPolicy {
				errs = append(errs, field.NotSupported(p.Child("reinvocationPolicy"), *rp, []string{"Never", "IfNeeded"}))
			}
		}
		return errs, true
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		spec := field.NewPath("spec")
		errs = append(errs, validatePolicyCommon(spec, o.Spec.ParamKind, o.Spec.MatchConstraints, o.Spec.FailurePolicy, o.Spec.MatchConditions, o.Spec.Variables)...)
		if len(o.Spec.Validations) == 0 && len(o.Spec.AuditAnnotations) == 0 {
			errs = append(errs, field.Required(spec.Child("validations"), "validations or auditAnnotations must contain at least one item"))
		}
		for i, v := range o.Spec.Validations {
			if strings.TrimSpace(v.Expression) == "" {
				errs = append(errs, field.Required(spec.Child("validations").Index(i).Child("expression"), "expression is not specified"))
			}
		}
		for i, a := range o.Spec.AuditAnnotations {
			p := spec.Child("auditAnnotations").Index(i)
			if len(a.Key) == 0 {
				errs = append(errs, field.Required(p.Child("key"), ""))
			}
			if strings.TrimSpace(a.ValueExpression) == "" {
				errs = append(errs, field.Required(p.Child("valueExpression"), "valueExpression is not specified"))
			}
		}
		return errs, true
	case *admissionregistrationv1.MutatingAdmissionPolicy:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		spec := field.NewPath("spec")
		errs = append(errs, validatePolicyCommon(spec, o.Spec.ParamKind, o.Spec.MatchConstraints, o.Spec.FailurePolicy, o.Spec.MatchConditions, o.Spec.Variables)...)
		if len(o.Spec.Mutations) == 0 {
			errs = append(errs, field.Required(spec.Child("mutations"), "mutations must contain at least one item"))
		}
		for i, m := range o.Spec.Mutations {
			p := spec.Child("mutations").Index(i)
			switch m.PatchType {
			case admissionregistrationv1.PatchTypeJSONPatch:
				if m.JSONPatch == nil || strings.TrimSpace(m.JSONPatch.Expression) == "" {
					errs = append(errs, field.Required(p.Child("jsonPatch", "expression"), "must be specified when patchType is JSONPatch"))
				}
			case admissionregistrationv1.PatchTypeApplyConfiguration:
				if m.ApplyConfiguration == nil || strings.TrimSpace(m.ApplyConfiguration.Expression) == "" {
					errs = append(errs, field.Required(p.Child("applyConfiguration", "expression"), "must be specified when patchType is ApplyConfiguration"))
				}
			default:
				errs = append(errs, field.NotSupported(p.Child("patchType"), m.PatchType, []string{"ApplyConfiguration", "JSONPatch"}))
			}
		}
		switch o.Spec.ReinvocationPolicy {
		case admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy:
		default:
			errs = append(errs, field.NotSupported(spec.Child("reinvocationPolicy"), o.Spec.ReinvocationPolicy, []string{"Never", "IfNeeded"}))
		}
		return errs, true
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		spec := field.NewPath("spec")
		errs = append(errs, validateBindingCommon(spec, o.Spec.PolicyName, o.Spec.ParamRef, o.Spec.MatchResources)...)
		p := spec.Child("validationActions")
		if len(o.Spec.ValidationActions) == 0 {
			errs = append(errs, field.Required(p, "at least one validation action is required"))
		}
		seen := sets.New[admissionregistrationv1.ValidationAction]()
		for i, a := range o.Spec.ValidationActions {
			switch a {
			case admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Audit:
			default:
				errs = append(errs, field.NotSupported(p.Index(i), a, []string{"Deny", "Warn", "Audit"}))
			}
			if seen.Has(a) {
				errs = append(errs, field.Duplicate(p.Index(i), a))
			}
			seen.Insert(a)
		}
		if seen.Has(admissionregistrationv1.Deny) && seen.Has(admissionregistrationv1.Warn) {
			errs = append(errs, field.Invalid(p, o.Spec.ValidationActions, "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"))
		}
		return errs, true
	case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
		errs := objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, validateBindingCommon(field.NewPath("spec"), o.Spec.PolicyName, o.Spec.ParamRef, o.Spec.MatchResources)...), true
	}
	return nil, false
}

func validateWebhook(p *field.Path, name string, names sets.Set[string], cc admissionregistrationv1.WebhookClientConfig,
	rules []admissionregistrationv1.RuleWithOperations, fp *admissionregistrationv1.FailurePolicyType, mp *admissionregistrationv1.MatchPolicyType,
	nsSel, objSel *metav1.LabelSelector, se *admissionregistrationv1.SideEffectClass, timeout *int32, versions []string,
	conds []admissionregistrationv1.MatchCondition) field.ErrorList {
	var errs field.ErrorList
	// upstream: a fully qualified name, at least three segments
	errs = append(errs, qualifiedWebhookName(p.Child("name"), name)...)
	if names.Has(name) {
		errs = append(errs, field.Duplicate(p.Child("name"), name))
	}
	names.Insert(name)
	for i, r := range rules {
		rp := p.Child("rules").Index(i)
		if len(r.Operations) == 0 {
			errs = append(errs, field.Required(rp.Child("operations"), ""))
		}
		for j, op := range r.Operations {
			switch op {
			case admissionregistrationv1.OperationAll, admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete, admissionregistrationv1.Connect:
			default:
				errs = append(errs, field.NotSupported(rp.Child("operations").Index(j), op, []string{"*", "CREATE", "UPDATE", "DELETE", "CONNECT"}))
			}
		}
		errs = append(errs, validateRule(rp, r.Rule)...)
	}
	if fp != nil && *fp != admissionregistrationv1.Fail && *fp != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(p.Child("failurePolicy"), *fp, []string{"Fail", "Ignore"}))
	}
	if mp != nil && *mp != admissionregistrationv1.Exact && *mp != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, []string{"Equivalent", "Exact"}))
	}
	switch {
	case se == nil:
		errs = append(errs, field.Required(p.Child("sideEffects"), "must specify one of None, NoneOnDryRun"))
	case *se != admissionregistrationv1.SideEffectClassNone && *se != admissionregistrationv1.SideEffectClassNoneOnDryRun:
		errs = append(errs, field.NotSupported(p.Child("sideEffects"), *se, []string{"None", "NoneOnDryRun"}))
	}
	if timeout != nil && (*timeout < 1 || *timeout > 30) {
		errs = append(errs, field.Invalid(p.Child("timeoutSeconds"), *timeout, "the timeout value must be between 1 and 30 seconds"))
	}
	hasVersion := false
	for _, v := range versions {
		if v == "v1" || v == "v1beta1" {
			hasVersion = true
		}
	}
	if !hasVersion {
		errs = append(errs, field.Invalid(p.Child("admissionReviewVersions"), versions, "must include at least one of v1, v1beta1"))
	}
	cp := p.Child("clientConfig")
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(cp, "exactly one of url or service is required"))
	case cc.URL != nil:
		errs = append(errs, webhookutil.ValidateWebhookURL(cp.Child("url"), *cc.URL, true)...)
	default:
		port := int32(443)
		if cc.Service.Port != nil {
			port = *cc.Service.Port
		}
		errs = append(errs, webhookutil.ValidateWebhookService(cp.Child("service"), cc.Service.Name, cc.Service.Namespace, cc.Service.Path, port)...)
	}
	errs = append(errs, webhookutil.ValidateCABundle(cp.Child("caBundle"), cc.CABundle)...)
	if nsSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(nsSel, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if objSel != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(objSel, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	errs = append(errs, validateMatchConditions(p.Child("matchConditions"), conds)...)
	return errs
}

func qualifiedWebhookName(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	if len(errs) == 0 && strings.Count(name, ".") < 2 {
		errs = append(errs, field.Invalid(p, name, "should be a domain with at least three segments separated by dots"))
	}
	return errs
}

func validateRule(p *field.Path, r admissionregistrationv1.Rule) field.ErrorList {
	var errs field.ErrorList
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), ""))
	}
	if len(r.APIVersions) == 0 {
		errs = append(errs, field.Required(p.Child("apiVersions"), ""))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), ""))
	}
	if s := r.Scope; s != nil && *s != admissionregistrationv1.AllScopes && *s != admissionregistrationv1.ClusterScope && *s != admissionregistrationv1.NamespacedScope {
		errs = append(errs, field.NotSupported(p.Child("scope"), *s, []string{"*", "Cluster", "Namespaced"}))
	}
	return errs
}

func validateMatchConditions(p *field.Path, conds []admissionregistrationv1.MatchCondition) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, c := range conds {
		cp := p.Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Expression) == "" {
			errs = append(errs, field.Required(cp.Child("expression"), ""))
		}
	}
	return errs
}

func validatePolicyCommon(spec *field.Path, pk *admissionregistrationv1.ParamKind, mc *admissionregistrationv1.MatchResources,
	fp *admissionregistrationv1.FailurePolicyType, conds []admissionregistrationv1.MatchCondition, vars []admissionregistrationv1.Variable) field.ErrorList {
	var errs field.ErrorList
	if pk != nil {
		if pk.APIVersion == "" {
			errs = append(errs, field.Required(spec.Child("paramKind", "apiVersion"), ""))
		}
		if pk.Kind == "" {
			errs = append(errs, field.Required(spec.Child("paramKind", "kind"), ""))
		}
	}
	if mc == nil {
		errs = append(errs, field.Required(spec.Child("matchConstraints"), ""))
	} else {
		if len(mc.ResourceRules) == 0 {
			errs = append(errs, field.Required(spec.Child("matchConstraints", "resourceRules"), ""))
		}
		errs = append(errs, validateMatchResources(spec.Child("matchConstraints"), mc)...)
	}
	if fp != nil && *fp != admissionregistrationv1.Fail && *fp != admissionregistrationv1.Ignore {
		errs = append(errs, field.NotSupported(spec.Child("failurePolicy"), *fp, []string{"Fail", "Ignore"}))
	}
	errs = append(errs, validateMatchConditions(spec.Child("matchConditions"), conds)...)
	for i, v := range vars {
		vp := spec.Child("variables").Index(i)
		if v.Name == "" {
			errs = append(errs, field.Required(vp.Child("name"), ""))
		}
		if strings.TrimSpace(v.Expression) == "" {
			errs = append(errs, field.Required(vp.Child("expression"), ""))
		}
	}
	return errs
}

func validateMatchResources(p *field.Path, m *admissionregistrationv1.MatchResources) field.ErrorList {
	var errs field.ErrorList
	if m.NamespaceSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.NamespaceSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("namespaceSelector"))...)
	}
	if m.ObjectSelector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(m.ObjectSelector, metav1validation.LabelSelectorValidationOptions{}, p.Child("objectSelector"))...)
	}
	if mp := m.MatchPolicy; mp != nil && *mp != admissionregistrationv1.Exact && *mp != admissionregistrationv1.Equivalent {
		errs = append(errs, field.NotSupported(p.Child("matchPolicy"), *mp, []string{"Equivalent", "Exact"}))
	}
	for i, r := range m.ResourceRules {
		errs = append(errs, validateRule(p.Child("resourceRules").Index(i), r.Rule)...)
	}
	for i, r := range m.ExcludeResourceRules {
		errs = append(errs, validateRule(p.Child("excludeResourceRules").Index(i), r.Rule)...)
	}
	return errs
}

func validateBindingCommon(spec *field.Path, policy string, ref *admissionregistrationv1.ParamRef, mr *admissionregistrationv1.MatchResources) field.ErrorList {
	var errs field.ErrorList
	if policy == "" {
		errs = append(errs, field.Required(spec.Child("policyName"), ""))
	}
	if ref != nil {
		rp := spec.Child("paramRef")
		if (ref.Name == "") == (ref.Selector == nil) {
			errs = append(errs, field.Required(rp, "one of name or selector must be specified"))
		}
		if ref.ParameterNotFoundAction == nil {
			errs = append(errs, field.Required(rp.Child("parameterNotFoundAction"), ""))
		} else if a := *ref.ParameterNotFoundAction; a != admissionregistrationv1.DenyAction && a != admissionregistrationv1.AllowAction {
			errs = append(errs, field.NotSupported(rp.Child("parameterNotFoundAction"), a, []string{"Allow", "Deny"}))
		}
	}
	if mr != nil {
		errs = append(errs, validateMatchResources(spec.Child("matchResources"), mr)...)
	}
	return errs
}
