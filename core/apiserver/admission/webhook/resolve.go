package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/util/proxy"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// endpointResolver reaches a webhook's clientConfig.service through the Service's
// EndpointSlices, as upstream's kube-apiserver does (its endpoint service resolver): a
// ready endpoint of the Service port's target, picked at random, dialled directly (no
// node proxy in between), with TLS verified against the caBundle for the name
// <service>.<namespace>.svc. The choice among endpoints is upstream's
// proxy.RandomEndpoint; only the reads go through our watch cache.
type endpointResolver struct {
	reader admission.ObjectReader
}

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (r endpointResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
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
