package validation

import (
	"net"

	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The rules of upstream's pkg/apis/discovery/validation for EndpointSlice, with the same
// limits, messages and field paths.

const (
	maxEndpointSliceEndpoints = 1000
	maxEndpointSlicePorts     = 100
	maxEndpointAddresses      = 100
	maxEndpointZoneHints      = 8
)

var endpointSliceAddressTypes = []string{string(discoveryv1.AddressTypeIPv4), string(discoveryv1.AddressTypeIPv6), string(discoveryv1.AddressTypeFQDN)}

// validateDiscovery reports whether obj is an EndpointSlice, and its errors on create.
func validateDiscovery(obj runtime.Object) (field.ErrorList, bool) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, false
	}
	errs := objectMeta(&es.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	switch es.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	case "":
		errs = append(errs, field.Required(field.NewPath("addressType"), ""))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("addressType"), es.AddressType, endpointSliceAddressTypes))
	}
	errs = append(errs, validateSliceEndpoints(es.Endpoints, es.AddressType, field.NewPath("endpoints"))...)
	return append(errs, validateSlicePorts(es.Ports, field.NewPath("ports"))...), true
}

// validateDiscoveryUpdate adds to the create rules the immutability of addressType.
func validateDiscoveryUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateDiscovery(obj)
	if !ok {
		return nil, false
	}
	es, oes := obj.(*discoveryv1.EndpointSlice), old.(*discoveryv1.EndpointSlice)
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaUpdate(&es.ObjectMeta, &oes.ObjectMeta, metaPath)...)
	if es.AddressType != oes.AddressType {
		errs = append(errs, field.Invalid(field.NewPath("addressType"), es.AddressType, "field is immutable"))
	}
	return errs, true
}

func validateSliceEndpoints(eps []discoveryv1.Endpoint, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(eps) > maxEndpointSliceEndpoints {
		errs = append(errs, field.TooMany(fldPath, len(eps), maxEndpointSliceEndpoints))
		return errs
	}
	for i, ep := range eps {
		p := fldPath.Index(i)
		ap := p.Child("addresses")
		switch {
		case len(ep.Addresses) == 0:
			errs = append(errs, field.Required(ap, "must contain at least 1 address"))
		case len(ep.Addresses) > maxEndpointAddresses:
			errs = append(errs, field.TooMany(ap, len(ep.Addresses), maxEndpointAddresses))
		}
		for j, a := range ep.Addresses {
			errs = append(errs, validateSliceAddress(a, addrType, ap.Index(j))...)
		}
		if ep.Hostname != nil {
			errs = append(errs, validateOptionalName(*ep.Hostname, utilvalidation.IsDNS1123Label, p.Child("hostname"))...)
		}
		if ep.NodeName != nil {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*ep.NodeName, false) {
				errs = append(errs, field.Invalid(p.Child("nodeName"), *ep.NodeName, msg))
			}
		}
		if ep.Hints != nil && len(ep.Hints.ForZones) > maxEndpointZoneHints {
			errs = append(errs, field.TooMany(p.Child("hints", "forZones"), len(ep.Hints.ForZones), maxEndpointZoneHints))
		}
		if r := ep.TargetRef; r != nil && r.Name != "" {
			for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(r.Name, false) {
				errs = append(errs, field.Invalid(p.Child("targetRef", "name"), r.Name, msg))
			}
		}
	}
	return errs
}

func validateSliceAddress(a string, addrType discoveryv1.AddressType, fldPath *field.Path) field.ErrorList {
	ip := net.ParseIP(a)
	switch addrType {
	case discoveryv1.AddressTypeIPv4:
		if ip == nil || ip.To4() == nil {
			return field.ErrorList{field.Invalid(fldPath, a, "must be a valid IPv4 address")}
		}
	case discoveryv1.AddressTypeIPv6:
		if ip == nil || ip.To4() != nil {
			return field.ErrorList{field.Invalid(fldPath, a, "must be a valid IPv6 address")}
		}
	case discoveryv1.AddressTypeFQDN:
		return utilvalidation.IsFullyQualifiedDomainName(fldPath, a)
	default:
		return nil
	}
	// As upstream's ValidateEndpointIP: addresses that are never a pod's.
	switch {
	case ip.IsUnspecified():
		return field.ErrorList{field.Invalid(fldPath, a, "may not be unspecified (0.0.0.0)")}
	case ip.IsLoopback():
		return field.ErrorList{field.Invalid(fldPath, a, "may not be in the loopback range (127.0.0.0/8, ::1/128)")}
	case ip.IsLinkLocalUnicast():
		return field.ErrorList{field.Invalid(fldPath, a, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")}
	case ip.IsLinkLocalMulticast():
		return field.ErrorList{field.Invalid(fldPath, a, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")}
	}
	return nil
}

func validateSlicePorts(ports []discoveryv1.EndpointPort, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(ports) > maxEndpointSlicePorts {
		return field.ErrorList{field.TooMany(fldPath, len(ports), maxEndpointSlicePorts)}
	}
	names := map[string]bool{}
	for i, port := range ports {
		p := fldPath.Index(i)
		name := ""
		if port.Name != nil {
			name = *port.Name
		}
		errs = append(errs, validateOptionalName(name, utilvalidation.IsDNS1123Label, p.Child("name"))...)
		if names[name] {
			errs = append(errs, field.Duplicate(p.Child("name"), name))
		}
		names[name] = true
		if port.Protocol == nil {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else {
			errs = append(errs, validateProtocol(*port.Protocol, p.Child("protocol"))...)
		}
		if port.Port != nil {
			for _, msg := range utilvalidation.IsValidPortNum(int(*port.Port)) {
				errs = append(errs, field.Invalid(p.Child("port"), *port.Port, msg))
			}
		}
		if port.AppProtocol != nil {
			errs = append(errs, metav1validation.ValidateLabelName(*port.AppProtocol, p.Child("appProtocol"))...)
		}
	}
	return errs
}
