package defaults

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// discovery sets upstream's EndpointSlice defaults (a port's name "" and protocol TCP). It
// reports whether obj is an EndpointSlice.
func discovery(obj runtime.Object) bool {
	es, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok {
		return false
	}
	for i := range es.Ports {
		p := &es.Ports[i]
		if p.Name == nil {
			empty := ""
			p.Name = &empty
		}
		if p.Protocol == nil {
			tcp := corev1.ProtocolTCP
			p.Protocol = &tcp
		}
	}
	return true
}
