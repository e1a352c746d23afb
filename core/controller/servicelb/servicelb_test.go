package servicelb

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, ip string, ready bool) *corev1.Node {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}, {Type: corev1.NodeInternalIP, Address: ip}}}}
}

func TestIngress(t *testing.T) {
	nodes := []*corev1.Node{node("n3", "10.65.0.30", true), node("n1", "10.65.0.9", true), node("n2", "10.65.0.20", false),
		node("n4", "fd00::1", true)}
	lb := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	class := "example.com/lb"
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{"ready nodes' InternalIPs, in address order", lb, []string{"10.65.0.9", "10.65.0.30"}},
		{"not a LoadBalancer", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}}, nil},
		{"another implementation's class", &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: &class}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, in := range Ingress(tc.svc, nodes) {
				if in.IPMode == nil || *in.IPMode != corev1.LoadBalancerIPModeVIP {
					t.Errorf("%s: ipMode %v", in.IP, in.IPMode)
				}
				got = append(got, in.IP)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
