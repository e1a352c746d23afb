package validation

import (
	"fmt"
	"net"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of this file follow upstream's pkg/apis/{policy,scheduling,networking,core}/validation
// for PodDisruptionBudget, PriorityClass, ResourceQuota, LimitRange, ReplicationController,
// Ingress, IngressClass and NetworkPolicy, with the same messages and field paths.

// HighestUserDefinablePriority is the largest value a PriorityClass not named system-* may have.
const HighestUserDefinablePriority = int32(1000000000)

// SystemCriticalPriority is the value of the two built-in system priority classes' base.
const SystemCriticalPriority = 2 * HighestUserDefinablePriority

// SystemPriorityClasses are the classes the API server creates, with their values.
var SystemPriorityClasses = map[string]int32{
	"system-cluster-critical": SystemCriticalPriority,
	"system-node-critical":    SystemCriticalPriority + 1000,
}

// validatePolicy reports whether obj is one of this file's kinds, and its errors on create.
func validatePolicy(obj runtime.Object) (field.ErrorList, bool) {
	switch o := obj.(type) {
	case *policyv1.PodDisruptionBudget:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validatePDBSpec(&o.Spec, field.NewPath("spec"))...), true
	case *schedulingv1.PriorityClass:
		return validatePriorityClass(o), true
	case *corev1.ResourceQuota:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validateQuotaSpec(&o.Spec, field.NewPath("spec"))...), true
	case *corev1.LimitRange:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validateLimitRangeSpec(&o.Spec, field.NewPath("spec"))...), true
	case *corev1.ReplicationController:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validateRCSpec(&o.Spec, field.NewPath("spec"))...), true
	case *networkingv1.Ingress:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validateIngressSpec(&o.Spec, field.NewPath("spec"))...), true
	case *networkingv1.IngressClass:
		return append(objectMeta(&o.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain), validateIngressClassSpec(&o.Spec, field.NewPath("spec"))...), true
	case *networkingv1.NetworkPolicy:
		return append(objectMeta(&o.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain), validateNetworkPolicySpec(&o.Spec, field.NewPath("spec"))...), true
	}
	return nil, false
}

// validatePolicyUpdate is validatePolicy for an update of old (same type) to obj.
func validatePolicyUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validatePolicy(obj)
	if !ok {
		return nil, false
	}
	newMeta, oldMeta := metaOf(obj), metaOf(old)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(newMeta, oldMeta, metaPath)...)
	switch o := obj.(type) {
	case *schedulingv1.PriorityClass:
		po := old.(*schedulingv1.PriorityClass)
		if o.Value != po.Value {
			errs = append(errs, field.Forbidden(field.NewPath("value"), "may not be changed in an update."))
		}
		if !ptrEqual(o.PreemptionPolicy, po.PreemptionPolicy) {
			errs = append(errs, field.Forbidden(field.NewPath("preemptionPolicy"), "may not be changed in an update."))
		}
	case *networkingv1.IngressClass:
		if o.Spec.Controller != old.(*networkingv1.IngressClass).Spec.Controller {
			errs = append(errs, field.Invalid(field.NewPath("spec", "controller"), o.Spec.Controller, "field is immutable"))
		}
	}
	return errs, true
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func metaOf(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *policyv1.PodDisruptionBudget:
		return &o.ObjectMeta
	case *schedulingv1.PriorityClass:
		return &o.ObjectMeta
	case *corev1.ResourceQuota:
		return &o.ObjectMeta
	case *corev1.LimitRange:
		return &o.ObjectMeta
	case *corev1.ReplicationController:
		return &o.ObjectMeta
	case *networkingv1.Ingress:
		return &o.ObjectMeta
	case *networkingv1.IngressClass:
		return &o.ObjectMeta
	case *networkingv1.NetworkPolicy:
		return &o.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}

// ---- PodDisruptionBudget ----

func validatePDBSpec(spec *policyv1.PodDisruptionBudgetSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(fldPath, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	for name, v := range map[string]*intstr.IntOrString{"minAvailable": spec.MinAvailable, "maxUnavailable": spec.MaxUnavailable} {
		if v == nil {
			continue
		}
		errs = append(errs, validatePositiveIntOrPercent(*v, fldPath.Child(name))...)
		if p, ok := percentValue(*v); ok && p > 100 {
			errs = append(errs, field.Invalid(fldPath.Child(name), v.String(), "must not be greater than 100%"))
		}
	}
	if spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if p := spec.UnhealthyPodEvictionPolicy; p != nil && *p != policyv1.IfHealthyBudget && *p != policyv1.AlwaysAllow {
		errs = append(errs, field.NotSupported(fldPath.Child("unhealthyPodEvictionPolicy"), *p, []string{string(policyv1.IfHealthyBudget), string(policyv1.AlwaysAllow)}))
	}
	return errs
}

// ---- PriorityClass ----

func validatePriorityClass(pc *schedulingv1.PriorityClass) field.ErrorList {
	errs := objectMeta(&pc.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	if v, system := SystemPriorityClasses[pc.Name]; system {
		if pc.Value != v {
			errs = append(errs, field.Invalid(field.NewPath("value"), pc.Value, fmt.Sprintf("value of the system priority class %s must be %d", pc.Name, v)))
		}
	} else {
		if strings.HasPrefix(pc.Name, "system-") {
			errs = append(errs, field.Forbidden(metaPath.Child("name"), "priority class names with 'system-' prefix are reserved"))
		}
		if pc.Value > HighestUserDefinablePriority {
			errs = append(errs, field.Forbidden(field.NewPath("value"), fmt.Sprintf("maximum allowed value of a user defined priority is %v", HighestUserDefinablePriority)))
		}
	}
	if p := pc.PreemptionPolicy; p != nil && *p != corev1.PreemptLowerPriority && *p != corev1.PreemptNever {
		errs = append(errs, field.NotSupported(field.NewPath("preemptionPolicy"), *p, []string{string(corev1.PreemptLowerPriority), string(corev1.PreemptNever)}))
	}
	return errs
}

// ---- ResourceQuota and LimitRange ----

// quotaResourceName checks a name under spec.hard: a standard resource (cpu, pods,
// requests.memory, count/deployments.apps, ...) or a domain-qualified one.
func quotaResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	s := string(name)
	var errs field.ErrorList
	for _, msg := range utilvalidation.IsQualifiedName(strings.TrimPrefix(strings.TrimPrefix(s, "requests."), "limits.")) {
		if strings.HasPrefix(s, "count/") {
			break
		}
		errs = append(errs, field.Invalid(fldPath, s, msg))
	}
	if strings.HasPrefix(s, "count/") && len(s) == len("count/") {
		errs = append(errs, field.Invalid(fldPath, s, "must name a resource after count/"))
	}
	return errs
}

var quotaScopes = map[corev1.ResourceQuotaScope]bool{
	corev1.ResourceQuotaScopeTerminating: true, corev1.ResourceQuotaScopeNotTerminating: true,
	corev1.ResourceQuotaScopeBestEffort: true, corev1.ResourceQuotaScopeNotBestEffort: true,
	corev1.ResourceQuotaScopePriorityClass: true, corev1.ResourceQuotaScopeCrossNamespacePodAffinity: true,
}

func validateQuotaSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	hardPath := fldPath.Child("hard")
	for k, v := range spec.Hard {
		p := hardPath.Key(string(k))
		errs = append(errs, quotaResourceName(k, p)...)
		if v.Sign() < 0 {
			errs = append(errs, field.Invalid(p, v.String(), "must be greater than or equal to 0"))
		}
	}
	for i, sc := range spec.Scopes {
		if !quotaScopes[sc] {
			errs = append(errs, field.Invalid(fldPath.Child("scopes").Index(i), sc, "unsupported scope"))
		}
	}
	if spec.ScopeSelector != nil {
		for i, req := range spec.ScopeSelector.MatchExpressions {
			if !quotaScopes[req.ScopeName] {
				errs = append(errs, field.Invalid(fldPath.Child("scopeSelector", "matchExpressions").Index(i).Child("scopeName"), req.ScopeName, "unsupported scope"))
			}
		}
	}
	return errs
}

func validateLimitRangeSpec(spec *corev1.LimitRangeSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Limits {
		item := &spec.Limits[i]
		p := fldPath.Child("limits").Index(i)
		switch item.Type {
		case corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim:
		default:
			errs = append(errs, field.NotSupported(p.Child("type"), item.Type, []string{string(corev1.LimitTypePod), string(corev1.LimitTypeContainer), string(corev1.LimitTypePersistentVolumeClaim)}))
		}
		if item.Type == corev1.LimitTypePod {
			if len(item.Default) > 0 {
				errs = append(errs, field.Forbidden(p.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(item.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(p.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		}
		for _, list := range []struct {
			name string
			rl   corev1.ResourceList
		}{{"max", item.Max}, {"min", item.Min}, {"default", item.Default}, {"defaultRequest", item.DefaultRequest}, {"maxLimitRequestRatio", item.MaxLimitRequestRatio}} {
			for k, v := range list.rl {
				if v.Sign() < 0 {
					errs = append(errs, field.Invalid(p.Child(list.name).Key(string(k)), v.String(), "must be greater than or equal to 0"))
				}
			}
		}
		for k, mn := range item.Min {
			if mx, ok := item.Max[k]; ok && mn.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("min").Key(string(k)), mn.String(), fmt.Sprintf("min value %s is greater than max value %s", mn.String(), mx.String())))
			}
		}
		for k, d := range item.Default {
			if mx, ok := item.Max[k]; ok && d.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(string(k)), d.String(), fmt.Sprintf("default value %s is greater than max value %s", d.String(), mx.String())))
			}
			if mn, ok := item.Min[k]; ok && mn.Cmp(d) > 0 {
				errs = append(errs, field.Invalid(p.Child("default").Key(string(k)), d.String(), fmt.Sprintf("min value %s is greater than default value %s", mn.String(), d.String())))
			}
		}
		for k, dr := range item.DefaultRequest {
			if mx, ok := item.Max[k]; ok && dr.Cmp(mx) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(k)), dr.String(), fmt.Sprintf("default request value %s is greater than max value %s", dr.String(), mx.String())))
			}
			if mn, ok := item.Min[k]; ok && mn.Cmp(dr) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(k)), dr.String(), fmt.Sprintf("min value %s is greater than default request value %s", mn.String(), dr.String())))
			}
			if d, ok := item.Default[k]; ok && dr.Cmp(d) > 0 {
				errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(k)), dr.String(), fmt.Sprintf("default request value %s is greater than default limit value %s", dr.String(), d.String())))
			}
		}
	}
	return errs
}

// ---- ReplicationController ----

func validateRCSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	errs := nonNegative(spec.Replicas, fldPath.Child("replicas"))
	errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	selPath := fldPath.Child("selector")
	if len(spec.Selector) == 0 {
		errs = append(errs, field.Required(selPath, ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabels(spec.Selector, selPath)...)
	}
	tPath := fldPath.Child("template")
	if spec.Template == nil {
		return append(errs, field.Required(tPath, ""))
	}
	if len(spec.Selector) > 0 && !labels.SelectorFromSet(spec.Selector).Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(tPath.Child("metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	errs = append(errs, validatePodTemplateSpec(spec.Template, tPath)...)
	if spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(tPath.Child("spec", "restartPolicy"), spec.Template.Spec.RestartPolicy, []string{string(corev1.RestartPolicyAlways)}))
	}
	return errs
}

// ---- Ingress, IngressClass ----

func validateIngressBackend(b *networkingv1.IngressBackend, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Service != nil && b.Resource != nil:
		errs = append(errs, field.Invalid(fldPath, "", "cannot set both resource and service backends"))
	case b.Service != nil:
		sp := fldPath.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			for _, msg := range apimachineryvalidation.NameIsDNS1035Label(b.Service.Name, false) {
				errs = append(errs, field.Invalid(sp.Child("name"), b.Service.Name, msg))
			}
		}
		port := b.Service.Port
		pp := sp.Child("port")
		switch {
		case port.Name != "" && port.Number != 0:
			errs = append(errs, field.Invalid(pp, port.Name, "cannot set both port name & port number"))
		case port.Name != "":
			for _, msg := range utilvalidation.IsValidPortName(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
		case port.Number != 0:
			for _, msg := range utilvalidation.IsValidPortNum(int(port.Number)) {
				errs = append(errs, field.Invalid(pp.Child("number"), port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(pp, "port name or number is required"))
		}
	case b.Resource != nil:
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(fldPath.Child("resource", "kind"), ""))
		}
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(fldPath.Child("resource", "name"), ""))
		}
	default:
		errs = append(errs, field.Invalid(fldPath, "", "resource or service backend is required"))
	}
	return errs
}

func validateIngressHost(host string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if net.ParseIP(host) != nil {
		return append(errs, field.Invalid(fldPath, host, "must be a DNS name, not an IP address"))
	}
	msgs := utilvalidation.IsDNS1123Subdomain(host)
	if strings.Contains(host, "*") {
		msgs = utilvalidation.IsWildcardDNS1123Subdomain(host)
	}
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(fldPath, host, msg))
	}
	return errs
}

func validateIngressSpec(spec *networkingv1.IngressSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Rules) == 0 && spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(fldPath, spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(spec.DefaultBackend, fldPath.Child("defaultBackend"))...)
	}
	if c := spec.IngressClassName; c != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*c, false) {
			errs = append(errs, field.Invalid(fldPath.Child("ingressClassName"), *c, msg))
		}
	}
	for i, rule := range spec.Rules {
		rp := fldPath.Child("rules").Index(i)
		if rule.Host != "" {
			errs = append(errs, validateIngressHost(rule.Host, rp.Child("host"))...)
		}
		if rule.HTTP == nil {
			continue
		}
		pathsPath := rp.Child("http", "paths")
		if len(rule.HTTP.Paths) == 0 {
			errs = append(errs, field.Required(pathsPath, ""))
		}
		for j, p := range rule.HTTP.Paths {
			pp := pathsPath.Index(j)
			if p.PathType == nil {
				errs = append(errs, field.Required(pp.Child("pathType"), "pathType must be specified"))
			} else {
				switch *p.PathType {
				case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
					if !strings.HasPrefix(p.Path, "/") {
						errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be an absolute path"))
					}
					for _, bad := range []string{"//", "/./", "/../", "%2f", "%2F"} {
						if strings.Contains(p.Path, bad) {
							errs = append(errs, field.Invalid(pp.Child("path"), p.Path, fmt.Sprintf("must not contain '%s'", bad)))
						}
					}
				case networkingv1.PathTypeImplementationSpecific:
					if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
						errs = append(errs, field.Invalid(pp.Child("path"), p.Path, "must be an absolute path"))
					}
				default:
					errs = append(errs, field.NotSupported(pp.Child("pathType"), *p.PathType, []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypePrefix), string(networkingv1.PathTypeImplementationSpecific)}))
				}
			}
			errs = append(errs, validateIngressBackend(&p.Backend, pp.Child("backend"))...)
		}
	}
	for i, tls := range spec.TLS {
		for j, h := range tls.Hosts {
			errs = append(errs, validateIngressHost(h, fldPath.Child("tls").Index(i).Child("hosts").Index(j))...)
		}
		if tls.SecretName != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(tls.SecretName, false) {
				errs = append(errs, field.Invalid(fldPath.Child("tls").Index(i).Child("secretName"), tls.SecretName, msg))
			}
		}
	}
	return errs
}

func validateIngressClassSpec(spec *networkingv1.IngressClassSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	cp := fldPath.Child("controller")
	switch {
	case spec.Controller == "":
		errs = append(errs, field.Required(cp, ""))
	case len(spec.Controller) > 250:
		errs = append(errs, field.TooLong(cp, "", 250))
	default:
		// Upstream: a domain-prefixed path, such as example.com/ingress-controller.
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(cp, spec.Controller)...)
	}
	if p := spec.Parameters; p != nil {
		pp := fldPath.Child("parameters")
		if p.Kind == "" {
			errs = append(errs, field.Required(pp.Child("kind"), ""))
		}
		if p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), ""))
		}
		if p.Scope != nil {
			switch *p.Scope {
			case networkingv1.IngressClassParametersReferenceScopeCluster:
				if p.Namespace != nil {
					errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
				}
			case networkingv1.IngressClassParametersReferenceScopeNamespace:
				if p.Namespace == nil {
					errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
				}
			default:
				errs = append(errs, field.NotSupported(pp.Child("scope"), *p.Scope, []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}))
			}
		}
	}
	return errs
}

// ---- NetworkPolicy ----

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Protocol != nil {
		switch *port.Protocol {
		case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
		default:
			errs = append(errs, field.NotSupported(fldPath.Child("protocol"), *port.Protocol, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
		}
	}
	if port.Port == nil {
		if port.EndPort != nil {
			errs = append(errs, field.Required(fldPath.Child("port"), "must specify port when endPort is set"))
		}
		return errs
	}
	if port.Port.Type == intstr.Int {
		for _, msg := range utilvalidation.IsValidPortNum(port.Port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port.IntValue(), msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, "must be greater than or equal to `port`"))
			}
			for _, msg := range utilvalidation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, msg))
			}
		}
		return errs
	}
	if port.EndPort != nil {
		errs = append(errs, field.Invalid(fldPath.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
	}
	for _, msg := range utilvalidation.IsValidPortName(port.Port.StrVal) {
		errs = append(errs, field.Invalid(fldPath.Child("port"), port.Port.StrVal, msg))
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	opts := metav1validation.LabelSelectorValidationOptions{}
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fldPath.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fldPath.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath, "may not specify more than 1 peer type"))
		}
		n++
		bp := fldPath.Child("ipBlock")
		_, cidr, err := net.ParseCIDR(peer.IPBlock.CIDR)
		if peer.IPBlock.CIDR == "" {
			errs = append(errs, field.Required(bp.Child("cidr"), ""))
		} else if err != nil {
			errs = append(errs, field.Invalid(bp.Child("cidr"), peer.IPBlock.CIDR, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
		}
		for i, ex := range peer.IPBlock.Except {
			ep := bp.Child("except").Index(i)
			eip, enet, err := net.ParseCIDR(ex)
			if err != nil {
				errs = append(errs, field.Invalid(ep, ex, "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
				continue
			}
			if cidr != nil {
				cOnes, _ := cidr.Mask.Size()
				eOnes, _ := enet.Mask.Size()
				if !cidr.Contains(eip) || eOnes <= cOnes {
					errs = append(errs, field.Invalid(ep, ex, "must be a strict subset of `cidr`"))
				}
			}
		}
	}
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a peer"))
	}
	return errs
}

func validateNetworkPolicySpec(spec *networkingv1.NetworkPolicySpec, fldPath *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabelSelector(&spec.PodSelector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("podSelector"))
	for i, rule := range spec.Ingress {
		rp := fldPath.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], rp.Child("from").Index(j))...)
		}
	}
	for i, rule := range spec.Egress {
		rp := fldPath.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], rp.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], rp.Child("to").Index(j))...)
		}
	}
	allowed := []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}
	if len(spec.PolicyTypes) > len(allowed) {
		errs = append(errs, field.Invalid(fldPath.Child("policyTypes"), spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, pt := range spec.PolicyTypes {
		if pt != networkingv1.PolicyTypeIngress && pt != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(fldPath.Child("policyTypes").Index(i), pt, allowed))
		}
	}
	return errs
}
