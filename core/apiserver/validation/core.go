package validation

import (
	"bytes"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var (
	supportedServiceTypes     = []string{string(corev1.ServiceTypeClusterIP), string(corev1.ServiceTypeExternalName), string(corev1.ServiceTypeLoadBalancer), string(corev1.ServiceTypeNodePort)}
	supportedSessionAffinity  = []string{string(corev1.ServiceAffinityClientIP), string(corev1.ServiceAffinityNone)}
	supportedTrafficPolicies  = []string{string(corev1.ServiceExternalTrafficPolicyCluster), string(corev1.ServiceExternalTrafficPolicyLocal)}
	maxConfigMapBytes         = corev1.MaxSecretSize
	eventReasonLengthLimit    = 128
	eventActionLengthLimit    = 128
	eventNoteLengthLimit      = 1024
	eventReportingInstanceLen = 128
)

func isHeadless(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP == corev1.ClusterIPNone
}

// validateService follows upstream for names (DNS-1035 label), ports, type, selector,
// sessionAffinity and the shape of clusterIP(s); address allocation belongs to the API server.
func validateService(svc *corev1.Service) field.ErrorList {
	allErrs := objectMeta(&svc.ObjectMeta, true, apimachineryvalidation.NameIsDNS1035Label)
	return append(allErrs, validateServiceSpec(svc)...)
}

func validateServiceSpec(svc *corev1.Service) field.ErrorList {
	var allErrs field.ErrorList
	specPath := field.NewPath("spec")
	spec := &svc.Spec
	if len(spec.Ports) == 0 && !isHeadless(svc) && spec.Type != corev1.ServiceTypeExternalName {
		allErrs = append(allErrs, field.Required(specPath.Child("ports"), ""))
	}
	switch {
	case spec.Type == "":
		allErrs = append(allErrs, field.Required(specPath.Child("type"), ""))
	case !slices.Contains(supportedServiceTypes, string(spec.Type)):
		allErrs = append(allErrs, field.NotSupported(specPath.Child("type"), spec.Type, supportedServiceTypes))
	}
	if spec.Type == corev1.ServiceTypeExternalName {
		if spec.ClusterIP != "" || len(spec.ClusterIPs) > 0 {
			allErrs = append(allErrs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		cname := strings.TrimSuffix(spec.ExternalName, ".")
		if cname == "" {
			allErrs = append(allErrs, field.Required(specPath.Child("externalName"), ""))
		} else {
			for _, msg := range utilvalidation.IsDNS1123Subdomain(cname) {
				allErrs = append(allErrs, field.Invalid(specPath.Child("externalName"), cname, msg))
			}
		}
	}
	allErrs = append(allErrs, validateClusterIPs(spec, specPath)...)

	names := sets.New[string]()
	seen := map[string]bool{}
	portsPath := specPath.Child("ports")
	for i := range spec.Ports {
		sp := &spec.Ports[i]
		p := portsPath.Index(i)
		if len(spec.Ports) > 1 && sp.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else if sp.Name != "" {
			for _, msg := range utilvalidation.IsDNS1123Label(sp.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), sp.Name, msg))
			}
			if names.Has(sp.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), sp.Name))
			}
			names.Insert(sp.Name)
		}
		for _, msg := range utilvalidation.IsValidPortNum(int(sp.Port)) {
			allErrs = append(allErrs, field.Invalid(p.Child("port"), sp.Port, msg))
		}
		allErrs = append(allErrs, validateProtocol(sp.Protocol, p.Child("protocol"))...)
		allErrs = append(allErrs, validatePortNumOrName(sp.TargetPort, p.Child("targetPort"))...)
		if sp.NodePort != 0 {
			if spec.Type == corev1.ServiceTypeClusterIP {
				allErrs = append(allErrs, field.Forbidden(p.Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			} else {
				for _, msg := range utilvalidation.IsValidPortNum(int(sp.NodePort)) {
					allErrs = append(allErrs, field.Invalid(p.Child("nodePort"), sp.NodePort, msg))
				}
			}
		}
		if sp.AppProtocol != nil {
			for _, msg := range utilvalidation.IsQualifiedName(*sp.AppProtocol) {
				allErrs = append(allErrs, field.Invalid(p.Child("appProtocol"), *sp.AppProtocol, msg))
			}
		}
		key := fmt.Sprintf("%s/%d", sp.Protocol, sp.Port)
		if seen[key] {
			allErrs = append(allErrs, field.Duplicate(p, key))
		}
		seen[key] = true
	}
	if spec.Selector != nil {
		allErrs = append(allErrs, metav1validation.ValidateLabels(spec.Selector, specPath.Child("selector"))...)
	}
	switch {
	case spec.SessionAffinity == "":
		allErrs = append(allErrs, field.Required(specPath.Child("sessionAffinity"), ""))
	case !slices.Contains(supportedSessionAffinity, string(spec.SessionAffinity)):
		allErrs = append(allErrs, field.NotSupported(specPath.Child("sessionAffinity"), spec.SessionAffinity, supportedSessionAffinity))
	}
	if spec.ExternalTrafficPolicy != "" {
		if spec.Type != corev1.ServiceTypeNodePort && spec.Type != corev1.ServiceTypeLoadBalancer {
			allErrs = append(allErrs, field.Invalid(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
		} else if !slices.Contains(supportedTrafficPolicies, string(spec.ExternalTrafficPolicy)) {
			allErrs = append(allErrs, field.NotSupported(specPath.Child("externalTrafficPolicy"), spec.ExternalTrafficPolicy, supportedTrafficPolicies))
		}
	}
	for i, ip := range spec.ExternalIPs {
		allErrs = append(allErrs, utilvalidation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}
	return allErrs
}

func validateClusterIPs(spec *corev1.ServiceSpec, specPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(spec.ClusterIPs) > 0 && spec.ClusterIP != "" && spec.ClusterIPs[0] != spec.ClusterIP {
		allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs"), spec.ClusterIPs, "first value must match `clusterIP`"))
	}
	ips := spec.ClusterIPs
	if len(ips) == 0 && spec.ClusterIP != "" {
		ips = []string{spec.ClusterIP}
	}
	if len(ips) > 2 {
		allErrs = append(allErrs, field.Invalid(specPath.Child("clusterIPs"), ips, "may only hold up to 2 values"))
	}
	for i, ip := range ips {
		p := specPath.Child("clusterIPs").Index(i)
		if ip == corev1.ClusterIPNone {
			if len(ips) > 1 {
				allErrs = append(allErrs, field.Invalid(p, ip, "'None' must be the first and only value"))
			}
			continue
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			allErrs = append(allErrs, field.Invalid(p, ip, "must be empty, 'None', or a valid IP address"))
		}
	}
	return allErrs
}

// validateServiceUpdate keeps an allocated clusterIP: it may not change except to or from
// ExternalName, as upstream.
func validateServiceUpdate(svc, old *corev1.Service) field.ErrorList {
	allErrs := metaUpdate(&svc.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateServiceSpec(svc)...)
	if svc.Spec.Type != corev1.ServiceTypeExternalName && old.Spec.Type != corev1.ServiceTypeExternalName &&
		old.Spec.ClusterIP != "" && svc.Spec.ClusterIP != old.Spec.ClusterIP {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP, "may not change once set"))
	}
	return allErrs
}

func validateEndpoints(ep *corev1.Endpoints) field.ErrorList {
	allErrs := objectMeta(&ep.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateEndpointsSubsets(ep)...)
}

func validateEndpointsSubsets(ep *corev1.Endpoints) field.ErrorList {
	var allErrs field.ErrorList
	fldPath := field.NewPath("subsets")
	for i := range ep.Subsets {
		ss := &ep.Subsets[i]
		idxPath := fldPath.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			allErrs = append(allErrs, field.Required(idxPath, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.Addresses[j], idxPath.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			allErrs = append(allErrs, validateEndpointAddress(&ss.NotReadyAddresses[j], idxPath.Child("notReadyAddresses").Index(j))...)
		}
		for j, port := range ss.Ports {
			p := idxPath.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				allErrs = append(allErrs, field.Required(p.Child("name"), ""))
			} else {
				allErrs = append(allErrs, validateOptionalName(port.Name, utilvalidation.IsDNS1123Label, p.Child("name"))...)
			}
			for _, msg := range utilvalidation.IsValidPortNum(int(port.Port)) {
				allErrs = append(allErrs, field.Invalid(p.Child("port"), port.Port, msg))
			}
			allErrs = append(allErrs, validateProtocol(port.Protocol, p.Child("protocol"))...)
		}
	}
	return allErrs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fldPath *field.Path) field.ErrorList {
	allErrs := utilvalidation.IsValidIP(fldPath.Child("ip"), a.IP)
	allErrs = append(allErrs, validateOptionalName(a.Hostname, utilvalidation.IsDNS1123Label, fldPath.Child("hostname"))...)
	if a.NodeName != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*a.NodeName, false) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("nodeName"), *a.NodeName, msg))
		}
	}
	return allErrs
}

func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	allErrs := objectMeta(&cm.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateConfigMapData(cm)...)
}

func validateConfigMapData(cm *corev1.ConfigMap) field.ErrorList {
	var allErrs field.ErrorList
	total := 0
	for _, key := range slices.Sorted(maps.Keys(cm.Data)) {
		for _, msg := range utilvalidation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			allErrs = append(allErrs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[key])
	}
	for _, key := range slices.Sorted(maps.Keys(cm.BinaryData)) {
		for _, msg := range utilvalidation.IsConfigMapKey(key) {
			allErrs = append(allErrs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(cm.BinaryData[key])
	}
	if total > maxConfigMapBytes {
		allErrs = append(allErrs, field.TooLong(field.NewPath(""), "", maxConfigMapBytes))
	}
	return allErrs
}

func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	allErrs := metaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	allErrs = append(allErrs, validateConfigMapData(cm)...)
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !maps.Equal(cm.Data, old.Data) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !maps.EqualFunc(cm.BinaryData, old.BinaryData, bytes.Equal) {
			allErrs = append(allErrs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	return allErrs
}

// validateEvent applies the core/v1 event rules: the namespace of the involved object must be
// the event's, and events with eventTime set carry the reporting fields.
func validateEvent(ev *corev1.Event) field.ErrorList {
	allErrs := objectMeta(&ev.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateEventFields(ev)...)
}

func validateEventFields(ev *corev1.Event) field.ErrorList {
	var allErrs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	if ev.EventTime.IsZero() {
		if ev.InvolvedObject.Namespace == "" {
			if ev.Namespace != metav1.NamespaceNone && ev.Namespace != metav1.NamespaceDefault {
				allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if ev.Namespace != ev.InvolvedObject.Namespace {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if ev.InvolvedObject.Namespace == "" && ev.Namespace != metav1.NamespaceDefault && ev.Namespace != metav1.NamespaceSystem {
			allErrs = append(allErrs, field.Invalid(nsPath, ev.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		allErrs = append(allErrs, eventReporting(eventFields{"reportingComponent", ev.ReportingController, ev.ReportingInstance, ev.Action, ev.Reason, "message", ev.Message})...)
	}
	if ev.Type != "" && ev.Type != corev1.EventTypeNormal && ev.Type != corev1.EventTypeWarning {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("type"), ev.Type, []string{corev1.EventTypeNormal, corev1.EventTypeWarning}))
	}
	return allErrs
}

func validateEventUpdate(ev, old *corev1.Event) field.ErrorList {
	allErrs := metaUpdate(&ev.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateEventFields(ev)...)
}

func validateLease(l *coordinationv1.Lease) field.ErrorList {
	allErrs := objectMeta(&l.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	return append(allErrs, validateLeaseSpec(&l.Spec, field.NewPath("spec"))...)
}

func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseDurationSeconds"), *spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("leaseTransitions"), *spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	return allErrs
}
