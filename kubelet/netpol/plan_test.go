package netpol

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func mkPod(ns, name, ip string, lbls map[string]string, ports ...v1.ContainerPort) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c", Ports: ports}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: ip}}
}

func mkNS(name string, lbls map[string]string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func sel(kv ...string) *metav1.LabelSelector {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return &metav1.LabelSelector{MatchLabels: m}
}

func policy(ns, name string, podSel *metav1.LabelSelector, types []networkingv1.PolicyType,
	ingress []networkingv1.NetworkPolicyIngressRule, egress []networkingv1.NetworkPolicyEgressRule) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *podSel, PolicyTypes: types, Ingress: ingress, Egress: egress}}
}

func tcp(p int32) networkingv1.NetworkPolicyPort {
	proto, port := v1.ProtocolTCP, intstr.FromInt32(p)
	return networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
}

// render writes a Ruleset with the sets' contents in place of their names.
func render(rs Ruleset) []string {
	ips := map[string]string{}
	for _, s := range rs.Sets {
		var parts []string
		for _, ip := range s.IPs {
			parts = append(parts, ip.String())
		}
		ips[s.Name] = "[" + strings.Join(parts, " ") + "]"
	}
	var out []string
	if rs.IngressIsolated != "" {
		out = append(out, "ingress-isolated "+ips[rs.IngressIsolated])
	}
	if rs.EgressIsolated != "" {
		out = append(out, "egress-isolated "+ips[rs.EgressIsolated])
	}
	for _, r := range rs.Rules {
		s := fmt.Sprintf("%s %s pods=%s", r.Policy, r.Dir, ips[r.Pods])
		if r.Peer != "" {
			s += " peer=" + ips[r.Peer]
		}
		if r.PeerCIDR.IsValid() {
			s += " cidr=" + r.PeerCIDR.String()
			for _, e := range r.Except {
				s += " except=" + e.String()
			}
		}
		if r.Proto != "" {
			s += " " + string(r.Proto)
		}
		if r.Port != 0 {
			s += fmt.Sprintf(":%d", r.Port)
		}
		if r.EndPort != 0 {
			s += fmt.Sprintf("-%d", r.EndPort)
		}
		out = append(out, s)
	}
	return out
}

func TestPlan(t *testing.T) {
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	hostNet := mkPod("a", "host", "192.0.2.1", map[string]string{"app": "web"})
	hostNet.Spec.HostNetwork = true
	done := mkPod("a", "done", "10.65.0.9", map[string]string{"app": "web"})
	done.Status.Phase = v1.PodSucceeded
	pods := []*v1.Pod{
		mkPod("a", "web-1", "10.65.0.2", map[string]string{"app": "web"}, v1.ContainerPort{Name: "http", ContainerPort: 8080}),
		mkPod("a", "web-2", "10.65.1.2", map[string]string{"app": "web"}, v1.ContainerPort{Name: "http", ContainerPort: 9090}),
		mkPod("a", "client", "10.65.0.3", map[string]string{"app": "client"}),
		mkPod("b", "client", "10.65.1.3", map[string]string{"app": "client"}),
		mkPod("c", "db", "10.65.2.4", map[string]string{"app": "db"}, v1.ContainerPort{Name: "pg", ContainerPort: 5432}),
		mkPod("a", "pending", "", map[string]string{"app": "web"}),
		hostNet, done,
	}
	nss := []*v1.Namespace{mkNS("a", map[string]string{"team": "x"}), mkNS("b", map[string]string{"team": "y"}), mkNS("c", nil)}
	endPort := int32(8090)
	named := intstr.FromString("http")
	namedPg := intstr.FromString("pg")
	udp := v1.ProtocolUDP
	udpPort := intstr.FromInt32(53)

	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		want     []string
	}{
		{name: "no policy: nothing isolated", want: nil},
		{name: "default deny ingress of a namespace",
			policies: []*networkingv1.NetworkPolicy{policy("a", "deny", sel(), ingress, nil, nil)},
			want:     []string{"ingress-isolated [10.65.0.2 10.65.0.3 10.65.1.2]"}},
		{name: "a policy selecting no pod isolates nothing",
			policies: []*networkingv1.NetworkPolicy{policy("a", "deny", sel("app", "none"), ingress, nil, nil)}},
		{name: "allow from pods of the namespace on a port",
			policies: []*networkingv1.NetworkPolicy{policy("a", "web", sel("app", "web"), ingress,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "client")}},
					Ports: []networkingv1.NetworkPolicyPort{tcp(8080)}}}, nil)},
			want: []string{"ingress-isolated [10.65.0.2 10.65.1.2]", "a/web ingress pods=[10.65.0.2 10.65.1.2] peer=[10.65.0.3] TCP:8080"}},
		{name: "namespaceSelector, and with podSelector",
			policies: []*networkingv1.NetworkPolicy{policy("c", "db", sel("app", "db"), ingress,
				[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
					{NamespaceSelector: sel("team", "y")},
					{NamespaceSelector: sel(), PodSelector: sel("app", "web")},
				}}}, nil)},
			want: []string{"ingress-isolated [10.65.2.4]", "c/db ingress pods=[10.65.2.4] peer=[10.65.1.3]",
				"c/db ingress pods=[10.65.2.4] peer=[10.65.0.2 10.65.1.2]"}},
		{name: "ipBlock with except, endPort, udp",
			policies: []*networkingv1.NetworkPolicy{policy("c", "db", sel("app", "db"), ingress,
				[]networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.65.0.0/16", Except: []string{"10.65.1.0/24"}}}},
					Ports: []networkingv1.NetworkPolicyPort{
						{Protocol: tcp(8080).Protocol, Port: tcp(8080).Port, EndPort: &endPort},
						{Protocol: &udp, Port: &udpPort}}}}, nil)},
			want: []string{"ingress-isolated [10.65.2.4]",
				"c/db ingress pods=[10.65.2.4] cidr=10.65.0.0/16 except=10.65.1.0/24 TCP:8080-8090",
				"c/db ingress pods=[10.65.2.4] cidr=10.65.0.0/16 except=10.65.1.0/24 UDP:53"}},
		{name: "named port resolved on each receiving pod",
			policies: []*networkingv1.NetworkPolicy{policy("a", "web", sel("app", "web"), ingress,
				[]networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &named}}}}, nil)},
			want: []string{"ingress-isolated [10.65.0.2 10.65.1.2]",
				"a/web ingress pods=[10.65.0.2] TCP:8080", "a/web ingress pods=[10.65.1.2] TCP:9090"}},
		{name: "egress: default deny but DNS and a named port on the peers",
			policies: []*networkingv1.NetworkPolicy{policy("a", "client", sel("app", "client"), egress, nil,
				[]networkingv1.NetworkPolicyEgressRule{
					{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &udpPort}}},
					{To: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel()}}, Ports: []networkingv1.NetworkPolicyPort{{Port: &namedPg}}},
				})},
			want: []string{"egress-isolated [10.65.0.3]", "a/client egress pods=[10.65.0.3] UDP:53",
				"a/client egress pods=[10.65.0.3] peer=[10.65.2.4] TCP:5432"}},
		{name: "policyTypes unset: ingress, and egress because of egress rules",
			policies: []*networkingv1.NetworkPolicy{policy("b", "p", sel(), nil, nil,
				[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel()}}}})},
			want: []string{"ingress-isolated [10.65.1.3]", "egress-isolated [10.65.1.3]", "b/p egress pods=[10.65.1.3] peer=[10.65.1.3]"}},
		{name: "an empty rule allows everything",
			policies: []*networkingv1.NetworkPolicy{policy("b", "all", sel(), ingress, []networkingv1.NetworkPolicyIngressRule{{}}, nil)},
			want:     []string{"ingress-isolated [10.65.1.3]", "b/all ingress pods=[10.65.1.3]"}},
		{name: "a peer selecting no pod allows nothing",
			policies: []*networkingv1.NetworkPolicy{policy("b", "p", sel(), ingress, []networkingv1.NetworkPolicyIngressRule{
				{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "none")}}}}, nil)},
			want: []string{"ingress-isolated [10.65.1.3]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(Plan(tc.policies, pods, nss))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
		})
	}
}

// Policies that select the same pods share one set, and the Ruleset does not depend on
// the order of its inputs.
func TestPlanSharesSetsAndIsDeterministic(t *testing.T) {
	var pods []*v1.Pod
	for i := range 10 {
		pods = append(pods, mkPod("a", fmt.Sprintf("p%d", i), fmt.Sprintf("10.65.0.%d", i+2), map[string]string{"app": "web"}))
	}
	var nps []*networkingv1.NetworkPolicy
	for i := range 20 {
		nps = append(nps, policy("a", fmt.Sprintf("np%02d", i), sel("app", "web"), nil,
			[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "web")}}}}, nil))
	}
	rs := Plan(nps, pods, nil)
	if len(rs.Sets) != 1 || len(rs.Rules) != 20 || len(rs.Sets[0].IPs) != 10 {
		t.Fatalf("%d sets, %d rules", len(rs.Sets), len(rs.Rules))
	}
	rev := append([]*networkingv1.NetworkPolicy(nil), nps...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if again := Plan(rev, pods[5:], nil); reflect.DeepEqual(again, rs) {
		t.Fatal("fewer pods, same Ruleset")
	}
	if again := Plan(rev, pods, nil); !reflect.DeepEqual(again, rs) {
		t.Fatal("order of policies changed the Ruleset")
	}
}

func ptrIntstr(s string) *intstr.IntOrString {
	v := intstr.FromString(s)
	return &v
}
