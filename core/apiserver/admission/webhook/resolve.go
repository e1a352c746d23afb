package webhook

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/util/proxy"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Routing says how a webhook's clientConfig.service is reached; TLS is verified against
// the caBundle for the name <service>.<namespace>.svc either way.
type Routing string

const (
	// RouteEndpoints dials a ready endpoint of the Service directly, as kube-apiserver with
	// --enable-aggregator-routing (its endpoint service resolver): no node proxy in
	// between, so it works on an API server host that runs none. The default.
	RouteEndpoints Routing = "Endpoints"
	// RouteClusterIP dials the Service's ClusterIP and port, which the node proxy of the
	// API server's host forwards to an endpoint, as kube-apiserver does by default (its
	// ClusterIP service resolver); an ExternalName Service is dialled at its name.
	RouteClusterIP Routing = "ClusterIP"
)

// serviceResolver reaches a webhook's clientConfig.service as its routing says. With
// RouteEndpoints it picks a ready endpoint of the Service port's target at random with
// upstream's proxy.RandomEndpoint; only the reads go through our watch cache.
type serviceResolver struct {
	reader  admission.ObjectReader
	routing Routing
}

func (r *serviceResolver) setRouting(routing Routing) error {
	if routing != RouteEndpoints && routing != RouteClusterIP {
		return fmt.Errorf("admission webhooks: service routing %q: must be %s or %s", routing, RouteEndpoints, RouteClusterIP)
	}
	r.routing = routing
	return nil
}

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (r *serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	if r.reader == nil {
		return nil, errors.New("webhook service resolver: the API server's object reader is not set")
	}
	ctx := context.Background()
	obj, err := r.reader.Get(ctx, "services", namespace, name)
	if errors.Is(err, admission.ErrNotFound) {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("service %s/%s not found", namespace, name))
	}
	if err != nil {
		return nil, err
	}
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, fmt.Errorf("service %s/%s: read a %T", namespace, name, obj)
	}
	if r.routing == RouteClusterIP && svc.Spec.Type == corev1.ServiceTypeExternalName {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, "":
	default:
		return nil, fmt.Errorf("service %s/%s: unsupported service type %q for a webhook", namespace, name, svc.Spec.Type)
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", port, name))
	}
	if r.routing == RouteClusterIP {
		if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
			return &url.URL{Scheme: "https", Host: net.JoinHostPort(ip, strconv.Itoa(int(port)))}, nil
		}
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("cannot route to service %s/%s with ClusterIP %q", namespace, name, svc.Spec.ClusterIP))
	}
	objs, err := r.reader.List(ctx, "endpointslices", namespace)
	if err != nil {
		return nil, err
	}
	var slices []*discoveryv1.EndpointSlice
	for _, o := range objs {
		if s, ok := o.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelServiceName] == name {
			slices = append(slices, s)
		}
	}
	family := corev1.IPFamilyUnknown
	if len(svc.Spec.IPFamilies) > 0 {
		family = svc.Spec.IPFamilies[0]
	}
	hostPort, err := proxy.RandomEndpoint(name, slices, svcPort.Name, family, nil)
	if err != nil {
		return nil, err
	}
	return &url.URL{Scheme: "https", Host: hostPort}, nil
}
