package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestServiceEnv(t *testing.T) {
	svc := func(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
	}
	all := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443}),
		svc("shop", "my-web", "10.96.0.20", v1.ServicePort{Port: 80}, v1.ServicePort{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}),
		svc("shop", "headless", v1.ClusterIPNone, v1.ServicePort{Port: 80}),
		svc("other", "db", "10.96.0.30", v1.ServicePort{Port: 5432}),
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}}
	got := strings.Join(ServiceEnv(pod, all), "\n")
	want := strings.Join([]string{
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443", "KUBERNETES_SERVICE_PORT_HTTPS=443",
		"KUBERNETES_PORT=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443", "KUBERNETES_PORT_443_TCP_PROTO=tcp",
		"KUBERNETES_PORT_443_TCP_PORT=443", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
		"MY_WEB_SERVICE_HOST=10.96.0.20", "MY_WEB_SERVICE_PORT=80", "MY_WEB_SERVICE_PORT_DNS=53",
		"MY_WEB_PORT=tcp://10.96.0.20:80", "MY_WEB_PORT_80_TCP=tcp://10.96.0.20:80", "MY_WEB_PORT_80_TCP_PROTO=tcp",
		"MY_WEB_PORT_80_TCP_PORT=80", "MY_WEB_PORT_80_TCP_ADDR=10.96.0.20",
		"MY_WEB_PORT_53_UDP=udp://10.96.0.20:53", "MY_WEB_PORT_53_UDP_PROTO=udp", "MY_WEB_PORT_53_UDP_PORT=53", "MY_WEB_PORT_53_UDP_ADDR=10.96.0.20",
	}, "\n")
	if got != want {
		t.Errorf("ServiceEnv:\n%s\nwant\n%s", got, want)
	}
	off := false
	pod.Spec.EnableServiceLinks = &off
	if got := ServiceEnv(pod, all); len(got) != 8 || !strings.HasPrefix(got[0], "KUBERNETES_") || !strings.HasPrefix(got[7], "KUBERNETES_") {
		t.Errorf("enableServiceLinks false: %q, want the kubernetes service's 8 variables alone", got)
	}
	env := withServiceEnv([]string{"A=svc", "B=svc"}, []string{"B=own", "C=own"})
	if strings.Join(env, ",") != "A=svc,B=own,C=own" {
		t.Errorf("withServiceEnv: %q, want the container's B to win", env)
	}
}
