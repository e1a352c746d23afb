package proxy

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlan(t *testing.T) {
	timeout := int32(60)
	now := metav1.Now()
	svcs := []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.10",
			Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}, {Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sticky"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.11",
			SessionAffinity: v1.ServiceAffinityClientIP, SessionAffinityConfig: &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: &timeout}},
			Ports: []v1.ServicePort{{Port: 8080}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "headless"}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Ports: []v1.ServicePort{{Port: 80}}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.org"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "draining"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.12", Ports: []v1.ServicePort{{Port: 80}}}},
		// A LoadBalancer: its ingress IPs (the nodes', from servicelb) and externalIPs are
		// answered too; an ingress with ipMode Proxy is not.
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lb"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.13",
			Type: v1.ServiceTypeLoadBalancer, ExternalIPs: []string{"192.0.2.7"}, Ports: []v1.ServicePort{{Port: 80}}},
			Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{
				{IP: "10.65.0.9"}, {IP: "10.65.0.30", IPMode: ptrTo(v1.LoadBalancerIPModeVIP)}, {IP: "198.51.100.1", IPMode: ptrTo(v1.LoadBalancerIPModeProxy)}}}}},
	}
	str := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	proto := func(p v1.Protocol) *v1.Protocol { return &p }
	ep := func(ip, node string, ready, serving, terminating bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: str(node),
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating}}
	}
	slice := func(svc, name string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc}}, AddressType: discoveryv1.AddressTypeIPv4, Ports: ports, Endpoints: eps}
	}
	webPorts := []discoveryv1.EndpointPort{{Name: str("http"), Port: port(8080), Protocol: proto(v1.ProtocolTCP)},
		{Name: str("dns"), Port: port(5353), Protocol: proto(v1.ProtocolUDP)}}
	eps := []*discoveryv1.EndpointSlice{
		// Two slices of one Service; endpoints on another node are backends too.
		slice("web", "web-a", webPorts, ep("10.42.0.3", "n1", true, true, false),
			ep("10.42.0.9", "n1", false, false, false)), // a failing readiness probe: not a backend
		slice("web", "web-b", webPorts, ep("10.42.1.2", "n2", true, true, false),
			ep("10.42.1.7", "n2", false, true, true)), // terminating: not while others are ready
		slice("sticky", "sticky-a", []discoveryv1.EndpointPort{{Name: str(""), Port: port(8080), Protocol: proto(v1.ProtocolTCP)}},
			discoveryv1.Endpoint{Addresses: []string{"10.42.0.4"}}), // conditions unset: ready
		// Only terminating endpoints left: the serving ones carry the traffic.
		slice("draining", "draining-a", []discoveryv1.EndpointPort{{Name: str(""), Port: port(80), Protocol: proto(v1.ProtocolTCP)}},
			ep("10.42.0.7", "n1", false, true, true), ep("10.42.0.8", "n1", false, false, true)),
		slice("lb", "lb-a", []discoveryv1.EndpointPort{{Name: str(""), Port: port(8080), Protocol: proto(v1.ProtocolTCP)}},
			ep("10.42.0.5", "n2", true, true, false)),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "v6", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
			AddressType: discoveryv1.AddressTypeIPv6, Ports: webPorts, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}},
	}
	pods := []*v1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hp"}, Spec: v1.PodSpec{Containers: []v1.Container{{Ports: []v1.ContainerPort{
			{ContainerPort: 80, HostPort: 8081}, {ContainerPort: 81}}}}}, Status: v1.PodStatus{PodIP: "10.42.0.5", Phase: v1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "gone", DeletionTimestamp: &now}, Spec: v1.PodSpec{Containers: []v1.Container{{Ports: []v1.ContainerPort{
			{ContainerPort: 80, HostPort: 8082}}}}}, Status: v1.PodStatus{PodIP: "10.42.0.6", Phase: v1.PodRunning}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "noip"}, Spec: v1.PodSpec{Containers: []v1.Container{{Ports: []v1.ContainerPort{
			{ContainerPort: 80, HostPort: 8083}}}}}},
	}
	got := Plan(svcs, eps, pods)
	want := Ruleset{
		Services: []ServicePort{
			{Name: "default/draining/80/tcp", ClusterIP: "10.96.0.12", Protocol: v1.ProtocolTCP, Port: 80,
				Endpoints: []Endpoint{{IP: "10.42.0.7", Port: 80}}},
			{Name: "default/lb/80/tcp", ClusterIP: "10.96.0.13", Protocol: v1.ProtocolTCP, Port: 80,
				ExternalIPs: []string{"10.65.0.30", "10.65.0.9", "192.0.2.7"}, Endpoints: []Endpoint{{IP: "10.42.0.5", Port: 8080}}},
			{Name: "default/sticky/8080/tcp", ClusterIP: "10.96.0.11", Protocol: v1.ProtocolTCP, Port: 8080, Affinity: time.Minute,
				Endpoints: []Endpoint{{IP: "10.42.0.4", Port: 8080}}},
			{Name: "default/web/dns/udp", ClusterIP: "10.96.0.10", Protocol: v1.ProtocolUDP, Port: 53,
				Endpoints: []Endpoint{{IP: "10.42.0.3", Port: 5353}, {IP: "10.42.1.2", Port: 5353}}},
			{Name: "default/web/http/tcp", ClusterIP: "10.96.0.10", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080,
				Endpoints: []Endpoint{{IP: "10.42.0.3", Port: 8080}, {IP: "10.42.1.2", Port: 8080}}},
		},
		HostPorts: []HostPort{{Pod: "default/hp", Protocol: v1.ProtocolTCP, HostPort: 8081, PodIP: "10.42.0.5", ContainerPort: 80}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Plan:\n got %+v\nwant %+v", got, want)
	}
}

func TestNewTableRefusesBadNetworks(t *testing.T) {
	for _, n := range []Network{
		{Bridge: "", PodCIDR: "10.42.0.0/24", ServiceCIDR: "10.96.0.0/16"},
		{Bridge: "a-very-long-bridge-name", PodCIDR: "10.42.0.0/24", ServiceCIDR: "10.96.0.0/16"},
		{Bridge: "br", PodCIDR: "fd00::/64", ServiceCIDR: "10.96.0.0/16"},
		{Bridge: "br", PodCIDR: "10.42.0.0/24", ServiceCIDR: "nope"},
		{Bridge: "br", PodCIDR: "10.42.0.0/24", ServiceCIDR: "10.96.0.0/16", NodeIPs: []string{"host"}},
	} {
		if _, err := newTable("t", n); err == nil {
			t.Errorf("newTable(%+v) accepted", n)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
