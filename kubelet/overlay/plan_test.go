package overlay

import (
	"fmt"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, podCIDR, ip string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{PodCIDR: podCIDR}}
	if ip != "" {
		n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeHostName, Address: name}, {Type: v1.NodeInternalIP, Address: ip}}
	}
	return n
}

func TestPlanHostGW(t *testing.T) {
	own := netip.MustParsePrefix("10.64.0.0/24")
	onLink := netip.MustParsePrefix("172.30.64.0/24")
	for _, tc := range []struct {
		name        string
		nodes       []*v1.Node
		wantRoutes  string
		wantSkipped []string
	}{
		{"one route per other node", []*v1.Node{
			node("self", "10.64.0.0/24", "172.30.64.1"),
			node("c", "10.64.2.0/24", "172.30.64.3"),
			node("b", "10.64.1.0/24", "172.30.64.2"),
		}, "[10.64.1.0/24 via 172.30.64.2 10.64.2.0/24 via 172.30.64.3]", nil},
		{"nodes without a usable subnet or address are skipped", []*v1.Node{
			node("waiting", "", "172.30.64.2"),
			node("hollow", "10.64.5.0/24", "127.0.0.1"),
			node("noaddr", "10.64.6.0/24", ""),
			node("far", "10.64.7.0/24", "192.168.9.9"),
			node("b", "10.64.1.0/24", "172.30.64.2"),
		}, "[10.64.1.0/24 via 172.30.64.2]", []string{"far", "hollow", "noaddr", "waiting"}},
		{"a subnet overlapping this node's or an earlier one's is skipped", []*v1.Node{
			node("a", "10.64.1.0/24", "172.30.64.2"),
			node("dup", "10.64.1.0/24", "172.30.64.3"),
			node("mine", "10.64.0.0/16", "172.30.64.4"),
		}, "[10.64.1.0/24 via 172.30.64.2]", []string{"dup", "mine"}},
		{"no other nodes: no routes", []*v1.Node{node("self", "10.64.0.0/24", "172.30.64.1")}, "[]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			routes, skipped := PlanHostGW("self", own, onLink, tc.nodes)
			if got := fmt.Sprint(routes); got != tc.wantRoutes {
				t.Errorf("routes %s, want %s", got, tc.wantRoutes)
			}
			var names []string
			for _, s := range skipped {
				names = append(names, s.Node)
				if s.Reason == "" {
					t.Errorf("node %s skipped without a reason", s.Node)
				}
			}
			if fmt.Sprint(names) != fmt.Sprint(tc.wantSkipped) && !(len(names) == 0 && len(tc.wantSkipped) == 0) {
				t.Errorf("skipped %v, want %v", names, tc.wantSkipped)
			}
		})
	}
}

func TestCheckBackend(t *testing.T) {
	for _, b := range []string{BackendVXLAN, BackendHostGW, BackendNone} {
		if err := CheckBackend(b); err != nil {
			t.Errorf("%s: %v", b, err)
		}
	}
	for _, b := range []string{"", "udp", "flannel"} {
		if err := CheckBackend(b); err == nil {
			t.Errorf("%q: want an error", b)
		}
	}
}

func vxnode(name, podCIDR, ip, mac, public string) *v1.Node {
	n := node(name, podCIDR, ip)
	n.Annotations = map[string]string{}
	if mac != "" {
		n.Annotations[AnnotationVTEPMAC] = mac
	}
	if public != "" {
		n.Annotations[AnnotationPublicIP] = public
	}
	return n
}

func TestPlanVXLAN(t *testing.T) {
	own := netip.MustParsePrefix("10.64.0.0/24")
	peers, skipped := PlanVXLAN("self", own, []*v1.Node{
		vxnode("self", "10.64.0.0/24", "172.30.64.1", "02:00:00:00:00:01", ""),
		vxnode("c", "10.64.2.0/24", "192.168.7.3", "02:00:00:00:00:03", "172.30.99.3"), // public-ip wins, any subnet
		vxnode("b", "10.64.1.0/24", "172.30.64.2", "02:00:00:00:00:02", ""),
		vxnode("nomac", "10.64.3.0/24", "172.30.64.4", "", ""),
		vxnode("badmac", "10.64.4.0/24", "172.30.64.5", "zz", ""),
		vxnode("waiting", "", "172.30.64.6", "02:00:00:00:00:06", ""),
		vxnode("dup", "10.64.1.0/24", "172.30.64.7", "02:00:00:00:00:07", ""),
	})
	want := "[10.64.1.0/24 via 10.64.1.0 (02:00:00:00:00:02 at 172.30.64.2) 10.64.2.0/24 via 10.64.2.0 (02:00:00:00:00:03 at 172.30.99.3)]"
	if got := fmt.Sprint(peers); got != want {
		t.Errorf("peers %s, want %s", got, want)
	}
	var names []string
	for _, s := range skipped {
		names = append(names, s.Node)
	}
	if fmt.Sprint(names) != "[badmac dup nomac waiting]" {
		t.Errorf("skipped %v", skipped)
	}
}
