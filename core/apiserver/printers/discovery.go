package printers

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Upstream's columns (pkg/printers/internalversion) for EndpointSlices.

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "AddressType", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]},
	{Name: "Ports", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]},
	{Name: "Endpoints", Type: "string", Description: discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]},
	ageColumn,
}

func printEndpointSlice(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return nil, nil, false
	}
	return []any{es.Name, string(es.AddressType), formatSlicePorts(es.Ports), formatSliceEndpoints(es.Endpoints), age(es.CreationTimestamp, now)}, nil, true
}

// formatSlicePorts is upstream's formatDiscoveryPorts: the port numbers, "<unset>" for a
// port without one, at most three then "+ N more...".
func formatSlicePorts(ports []discoveryv1.EndpointPort) string {
	if len(ports) == 0 {
		return "<unset>"
	}
	var out []string
	for i, p := range ports {
		if i == 3 {
			return strings.Join(out, ",") + fmt.Sprintf(" + %d more...", len(ports)-3)
		}
		if p.Port == nil {
			out = append(out, "<unset>")
		} else {
			out = append(out, strconv.Itoa(int(*p.Port)))
		}
	}
	return strings.Join(out, ",")
}

// formatSliceEndpoints is upstream's formatDiscoveryEndpoints: the first three addresses,
// then "+ N more...".
func formatSliceEndpoints(eps []discoveryv1.Endpoint) string {
	var addrs []string
	total := 0
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			if len(addrs) < 3 {
				addrs = append(addrs, a)
			}
			total++
		}
	}
	if total == 0 {
		return "<unset>"
	}
	s := strings.Join(addrs, ",")
	if total > 3 {
		s += fmt.Sprintf(" + %d more...", total-3)
	}
	return s
}

func init() {
	register(discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"), endpointSliceColumns, printEndpointSlice)
}
