package apiserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
	"github.com/wasmkube/wasmkube/internal/freebind"
)

// ensureKubernetesService keeps the `default/kubernetes` Service (the first address of
// the service range, port 443) and its Endpoints (this server's address and port), as
// upstream's API server does, so clients that look for the API inside the cluster find
// it.
func (s *Server) ensureKubernetesService(ctx context.Context, listenHost string, port int) error {
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
	svcStore.PrepareForCreate(svc, metav1.Now())
	if _, err := svcStore.Storage.Create(ctx, svcStore.Key(svc.Namespace, svc.Name), svcStore.TrackServerWrite(registry.ServerManager, nil, svc)); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return fmt.Errorf("create service default/kubernetes: %w", err)
	}

	epStore := s.stores[corev1.SchemeGroupVersion.WithResource("endpoints")]
	addr := advertiseIP(listenHost, s.opts.AdvertiseAddress)
	if ip := net.ParseIP(addr); ip != nil && ip.IsLoopback() {
		// A pod's 127.0.0.1 is its own: kubernetes.default.svc leads nowhere (docs/workloads.md).
		s.log.Warn("the kubernetes Service's endpoint is a loopback address: pods cannot reach the API server; give an --advertise-address that pods reach (wasmkube up advertises its node's pod-bridge gateway)",
			"endpoint", net.JoinHostPort(addr, fmt.Sprint(port)))
	}
	want := []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: addr}},
		Ports:     []corev1.EndpointPort{{Name: "https", Port: int32(port), Protocol: corev1.ProtocolTCP}},
	}}
	key := epStore.Key(metav1.NamespaceDefault, "kubernetes")
	_, err = epStore.Storage.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		ep := cur.DeepCopyObject().(*corev1.Endpoints)
		ep.Subsets = want
		return epStore.TrackServerWrite(registry.ServerManager, cur, ep), nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}}, Subsets: want}
		epStore.PrepareForCreate(ep, metav1.Now())
		_, err = epStore.Storage.Create(ctx, key, epStore.TrackServerWrite(registry.ServerManager, nil, ep))
		if errors.Is(err, storage.ErrAlreadyExists) {
			err = nil // another server made it at the same moment
		}
	}
	if err != nil {
		return fmt.Errorf("update endpoints default/kubernetes: %w", err)
	}
	return s.ensureKubernetesEndpointSlice(ctx, addr, int32(port))
}

// ensureKubernetesEndpointSlice keeps the EndpointSlice of the kubernetes Service, which
// the node proxies and DNS read: the Service has no selector, so no controller makes it,
// and its Endpoints carry skip-mirror, as upstream's API server writes both itself.
func (s *Server) ensureKubernetesEndpointSlice(ctx context.Context, addr string, port int32) error {
	st := s.stores[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	ready, name, proto := true, "https", corev1.ProtocolTCP
	addrType := discoveryv1.AddressTypeIPv4
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		addrType = discoveryv1.AddressTypeIPv6
	}
	want := func(es *discoveryv1.EndpointSlice) {
		if es.Labels == nil {
			es.Labels = map[string]string{}
		}
		es.Labels[discoveryv1.LabelServiceName] = "kubernetes"
		es.AddressType = addrType
		es.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}
		es.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}
	}
	key := st.Key(metav1.NamespaceDefault, "kubernetes")
	_, err := st.Storage.GuaranteedUpdate(ctx, key, nil, func(cur runtime.Object) (runtime.Object, error) {
		es := cur.DeepCopyObject().(*discoveryv1.EndpointSlice)
		want(es)
		return st.TrackServerWrite(registry.ServerManager, cur, es), nil
	})
	if errors.Is(err, storage.ErrNotFound) {
		es := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault}}
		want(es)
		st.PrepareForCreate(es, metav1.Now())
		_, err = st.Storage.Create(ctx, key, st.TrackServerWrite(registry.ServerManager, nil, es))
		if errors.Is(err, storage.ErrAlreadyExists) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("update endpointslice default/kubernetes: %w", err)
	}
	return nil
}

// advertiseIP is the address other hosts and pods reach this server at: the advertise
// address when one is set, else the listen address, or for a wildcard listen the first
// non-loopback address of the machine.
func advertiseIP(listenHost, advertise string) string {
	if advertise != "" {
		return advertise
	}
	if ip := net.ParseIP(listenHost); ip != nil && !ip.IsUnspecified() {
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

// CheckAdvertiseAddress refuses an advertise address that is not a usable IPv4 address
// (the service range, and so the kubernetes Service, is IPv4).
func CheckAdvertiseAddress(a string) error {
	if a == "" {
		return nil
	}
	ip := net.ParseIP(a)
	if ip == nil || ip.To4() == nil || ip.IsUnspecified() || ip.IsMulticast() {
		return fmt.Errorf("advertise address %q: not an IPv4 address; give the address pods and other hosts reach this server at (for example 10.42.0.1)", a)
	}
	return nil
}

// listenAdvertised listens on the advertise address at the API port when the listen
// address does not already cover it (a loopback or other single-address listen), so the
// address the kubernetes Endpoints name is served without listening on every interface.
// The socket is bound with IP_FREEBIND: under `wasmkube up` the advertise address is the
// pod bridge's gateway, which exists only once the node's first pod is networked. nil
// when no second listener is needed.
func listenAdvertised(listenHost, advertise string, port int) (net.Listener, error) {
	if advertise == "" {
		return nil, nil
	}
	if ip := net.ParseIP(listenHost); listenHost == "" || (ip != nil && (ip.IsUnspecified() || ip.Equal(net.ParseIP(advertise)))) {
		return nil, nil
	}
	lc := net.ListenConfig{Control: freebind.Control}
	addr := net.JoinHostPort(advertise, fmt.Sprint(port))
	ln, err := lc.Listen(context.Background(), "tcp4", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on the advertise address %s: %w (another server on this address and port? choose another port with --listen, or another --advertise-address)", addr, err)
	}
	return ln, nil
}
