package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// EndpointSlice validation names the field of each error, as upstream's.
func TestEndpointSliceValidation(t *testing.T) {
	good := func() *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.2"}, NodeName: ptr.To("n1"), Hostname: ptr.To("web-0")}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	}
	if errs := Validate(good()); len(errs) != 0 {
		t.Fatalf("a valid slice: %v", errs)
	}
	for _, tc := range []struct {
		name, field string
		edit        func(*discoveryv1.EndpointSlice)
	}{
		{"no addressType", "addressType", func(es *discoveryv1.EndpointSlice) { es.AddressType = "" }},
		{"unknown addressType", "addressType", func(es *discoveryv1.EndpointSlice) { es.AddressType = "IPv5" }},
		{"loopback address", "endpoints[0].addresses[0]", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses[0] = "127.0.0.1" }},
		{"IPv6 address in an IPv4 slice", "endpoints[0].addresses[0]", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses[0] = "fd00::1" }},
		{"no address", "endpoints[0].addresses", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Addresses = nil }},
		{"bad hostname", "endpoints[0].hostname", func(es *discoveryv1.EndpointSlice) { es.Endpoints[0].Hostname = ptr.To("Web_0") }},
		{"duplicate port name", "ports[1].name", func(es *discoveryv1.EndpointSlice) { es.Ports = append(es.Ports, es.Ports[0]) }},
		{"no protocol", "ports[0].protocol", func(es *discoveryv1.EndpointSlice) { es.Ports[0].Protocol = nil }},
		{"port out of range", "ports[0].port", func(es *discoveryv1.EndpointSlice) { es.Ports[0].Port = ptr.To(int32(70000)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := good()
			tc.edit(es)
			errs := Validate(es)
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.field) {
				t.Errorf("errors %v, want one on %s", errs, tc.field)
			}
		})
	}
	old, cur := good(), good()
	cur.AddressType = discoveryv1.AddressTypeFQDN
	cur.Endpoints[0].Addresses[0] = "web.example.com"
	if errs := ValidateUpdate(cur, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "addressType: Invalid value: \"FQDN\": field is immutable") {
		t.Errorf("addressType changed: %v", errs)
	}
}
