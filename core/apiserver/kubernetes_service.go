package apiserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/storage"
)

// ensureKubernetesService keeps the `default/kubernetes` Service (the first address of
// the service range, port 443) and its Endpoints (this server's address and port), as
// upstream's API server does, so clients that look for the API inside the cluster find
// it.
func (s *Server) ensureKubernetesService(ctx context.Context, host string, port int) error {
	_, cidr, err := net.ParseCIDR(s.opts.ServiceCIDR)
	if err != nil {
		return err
	}
	first := make(net.IP, 4)
	binary.BigEndian.PutUint32(first, binary.BigEndian.Uint32(cidr.IP.To4())+1)
	svcStore := s.stores[corev1.SchemeGroupVersion.WithResource("services")]
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: first.String(), ClusterIPs: []string{first.String()},
			SessionAffinity: corev1.ServiceAffinityNone,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(int32(port))}},
		},
	}
	defaults.Default(svc)
	svcStore.prepareForCreate(svc, metav1.Now())
	if _, err := svcStore.s.Create(ctx, svcStore.key(svc.Namespace, svc.Name), svc); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return fmt.Errorf("create service default/kubernetes: %w", err)
	}

	epStore := s.stores[corev1.SchemeGroupVersion.WithResource("endpoints")]
	addr := advertiseIP(host)
	if ip := net.ParseIP(addr); ip != nil && ip.IsLoopback() {
		// A pod's 127.0.0.1 is its own: kubernetes.default.svc leads nowhere (docs/workloads.md).
		s.log.Warn("the kubernetes Service's endpoint is a loopback address: pods cannot reach the API server; listen on 0.0.0.0 or a host address for in-cluster clients",
			"endpoint", net.JoinHostPort(addr, fmt.Sprint(port)))
	}
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: addr}},
		Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
	}}
	key := epStore.key(metav1.NamespaceDefault, "kubernetes")
	_, err = epStore.s.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		ep := cur.DeepCopyObject().(*corev1.Endpoints)
		ep.Subsets = want
		return ep, nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}}, Subsets: want}
		epStore.prepareForCreate(ep, metav1.Now())
		_, err = epStore.s.Create(ctx, key, ep)
		if errors.Is(err, storage.ErrAlreadyExists) {
			err = nil // another server made it at the same moment
		}
	}
	if err != nil {
		return fmt.Errorf("update endpoints default/kubernetes: %w", err)
	}
	return nil
}

// advertiseIP is the address other hosts reach this server at: the listen address, or
// for a wildcard listen the first non-loopback address of the machine.
func advertiseIP(host string) string {
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return ip.String()
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}
