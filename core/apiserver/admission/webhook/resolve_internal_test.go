package webhook

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// objects is an admission.ObjectReader over a fixed set of Services and EndpointSlices.
type objects []runtime.Object

func (objects) Resource(string) (schema.GroupVersionKind, bool, bool) {
	return schema.GroupVersionKind{}, true, true
}

func (o objects) Get(_ context.Context, res, ns, name string) (runtime.Object, error) {
	for _, x := range o {
		if s, ok := x.(*corev1.Service); ok && res == "services" && s.Namespace == ns && s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%s %s/%s: %w", res, ns, name, admission.ErrNotFound)
}

func (o objects) List(_ context.Context, res, ns string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, x := range o {
		if s, ok := x.(*discoveryv1.EndpointSlice); ok && res == "endpointslices" && s.Namespace == ns {
			out = append(out, s)
		}
	}
	return out, nil
}

// TestServiceRouting: a webhook's Service is reached at its ClusterIP (through the node
// proxy, kube-apiserver's default), at its name when it is an ExternalName, not at all
// when it is headless; with Endpoints routing, at a ready endpoint's address and target
// port.
func TestServiceRouting(t *testing.T) {
	ready := true
	svc := func(name, typ, ip, ext string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceType(typ), ClusterIP: ip, ExternalName: ext,
				Ports: []corev1.ServicePort{{Name: "https", Port: 443}}}}
	}
	port, portName := int32(8443), "https"
	r := objects{
		svc("web", "ClusterIP", "10.96.0.20", ""),
		svc("headless", "ClusterIP", "None", ""),
		svc("outside", "ExternalName", "", "hooks.example.test"),
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "hooks", Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.114.1.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:     []discoveryv1.EndpointPort{{Name: &portName, Port: &port}}},
	}
	for _, tc := range []struct {
		routing   Routing
		svc, want string
	}{
		{RouteClusterIP, "web", "https://10.96.0.20:443"},
		{RouteClusterIP, "outside", "https://hooks.example.test:443"},
		{RouteClusterIP, "headless", `cannot route to service hooks/headless with ClusterIP "None"`},
		{RouteEndpoints, "web", "https://10.114.1.7:8443"},
		{RouteClusterIP, "missing", "service hooks/missing not found"},
	} {
		res := &serviceResolver{reader: r}
		if err := res.setRouting(tc.routing); err != nil {
			t.Fatal(err)
		}
		u, err := res.ResolveEndpoint("hooks", tc.svc, 443)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = u.String()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s routing, service %s: got %q, want %q", tc.routing, tc.svc, got, tc.want)
		}
	}
	if err := (&serviceResolver{}).setRouting("NodePort"); err == nil || !strings.Contains(err.Error(), "must be Endpoints or ClusterIP") {
		t.Errorf("an unknown routing: %v", err)
	}
}
