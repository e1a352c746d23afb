// Package overlay carries pod traffic between nodes: from the Nodes' spec.podCIDR and
// InternalIP (the Node watch) it plans what this host's kernel needs to reach every other
// node's pods, and applies it through github.com/vishvananda/netlink (as the CNI plugins
// and flannel do), never through hand-built netlink messages.
//
// Backends (docs/multihost.md):
//   - host-gw: one route per other node's pod subnet via that node's InternalIP, for hosts
//     on one L2 segment (flannel's host-gw).
//   - vxlan: one VXLAN device per node; each other node's pod subnet is routed through it
//     to that node's VTEP, found by the MAC and address its Node announces in annotations
//     (flannel's vxlan backend), for hosts that only route IP between them.
//   - none: nothing routed (a single node, or routes kept by someone else).
//
// The plan is a pure function of the Nodes (plan.go); the kernel edges (hostgw.go,
// vxlan.go) only make the kernel match it, and own exactly the routes they tagged with
// their protocol (and, for vxlan, the device they made).
package overlay

import (
	"fmt"
	"net"
	"net/netip"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// Backends.
const (
	BackendHostGW = "host-gw"
	BackendVXLAN  = "vxlan"
	BackendNone   = "none"
)

// The annotations a node announces its VXLAN endpoint with (flannel's
// flannel.alpha.coreos.com/backend-data VtepMAC and public-ip, in wasmkube's names).
const (
	AnnotationVTEPMAC  = "wasmkube.io/vxlan-vtep-mac"
	AnnotationPublicIP = "wasmkube.io/public-ip"
)

// DefaultBackend is what a kubelet uses when not told otherwise: vxlan, which needs only
// IP between the hosts (flannel's and k3s's default).
const DefaultBackend = BackendVXLAN

// CheckBackend refuses a backend name wasmkube does not have.
func CheckBackend(name string) error {
	switch name {
	case BackendHostGW, BackendVXLAN, BackendNone:
		return nil
	}
	return fmt.Errorf("network backend %q: must be %s, %s or %s", name, BackendVXLAN, BackendHostGW, BackendNone)
}

// Peer is another node as a backend sees it.
type Peer struct {
	Node    string
	PodCIDR netip.Prefix
	NodeIP  netip.Addr
}

// Route is one route the host-gw backend keeps: Dst via Via.
type Route struct {
	Dst netip.Prefix
	Via netip.Addr
}

func (r Route) String() string { return r.Dst.String() + " via " + r.Via.String() }

// Skipped is a node a plan leaves out, and why.
type Skipped struct {
	Node, Reason string
}

// PlanHostGW is the routes this node (self, whose node IP is on the subnet onLink, with
// pod subnet own) needs: one per other node with a pod subnet and an InternalIP on the
// same subnet. The others are skipped with their reason (no subnet yet, no or an
// unreachable address, a subnet that overlaps this node's or an earlier node's). Routes
// come sorted by destination.
func PlanHostGW(self string, own, onLink netip.Prefix, nodes []*v1.Node) ([]Route, []Skipped) {
	var routes []Route
	var skipped []Skipped
	sorted := append([]*v1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	taken := []netip.Prefix{}
	if own.IsValid() {
		taken = append(taken, own)
	}
	for _, n := range sorted {
		if n.Name == self {
			continue
		}
		p, ok := peerOf(n)
		switch {
		case !ok && n.Spec.PodCIDR == "":
			skipped = append(skipped, Skipped{n.Name, "no spec.podCIDR yet"})
			continue
		case !ok:
			skipped = append(skipped, Skipped{n.Name, fmt.Sprintf("spec.podCIDR %q or its InternalIP is not usable IPv4", n.Spec.PodCIDR)})
			continue
		case !onLink.Contains(p.NodeIP):
			skipped = append(skipped, Skipped{n.Name, fmt.Sprintf("InternalIP %s is not on this node's subnet %s (host-gw needs one L2 segment)", p.NodeIP, onLink)})
			continue
		}
		if t := overlapping(taken, p.PodCIDR); t.IsValid() {
			skipped = append(skipped, Skipped{n.Name, fmt.Sprintf("spec.podCIDR %s overlaps %s", p.PodCIDR, t)})
			continue
		}
		taken = append(taken, p.PodCIDR)
		routes = append(routes, Route{Dst: p.PodCIDR, Via: p.NodeIP})
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].Dst.String() < routes[j].Dst.String() })
	return routes, skipped
}

func overlapping(ps []netip.Prefix, p netip.Prefix) netip.Prefix {
	for _, q := range ps {
		if q.Overlaps(p) {
			return q
		}
	}
	return netip.Prefix{}
}

// peerOf reads a Node's pod subnet and InternalIP (IPv4 only).
func peerOf(n *v1.Node) (Peer, bool) {
	cidr, err := netip.ParsePrefix(n.Spec.PodCIDR)
	if err != nil || !cidr.Addr().Is4() {
		return Peer{}, false
	}
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil || !ip.Is4() || ip.IsLoopback() || ip.IsUnspecified() {
			return Peer{}, false
		}
		return Peer{Node: n.Name, PodCIDR: cidr.Masked(), NodeIP: ip}, true
	}
	return Peer{}, false
}

// VXLANPeer is what this node keeps for another node with the vxlan backend: a route to
// its pod subnet via its VTEP address (the subnet's first address, on the device), a
// neighbour entry of that address with its VTEP MAC, and a forwarding entry sending that
// MAC to its node IP.
type VXLANPeer struct {
	PodCIDR netip.Prefix
	VTEP    netip.Addr // PodCIDR's network address, the peer device's own address
	MAC     net.HardwareAddr
	NodeIP  netip.Addr // the peer's wasmkube.io/public-ip, else its InternalIP
}

func (p VXLANPeer) String() string {
	return fmt.Sprintf("%s via %s (%s at %s)", p.PodCIDR, p.VTEP, p.MAC, p.NodeIP)
}

// PlanVXLAN is what this node (self, with pod subnet own) keeps for every other node that
// announces a VTEP MAC and has a pod subnet and an address; the others are skipped with
// their reason. Peers come sorted by subnet.
func PlanVXLAN(self string, own netip.Prefix, nodes []*v1.Node) ([]VXLANPeer, []Skipped) {
	var peers []VXLANPeer
	var skipped []Skipped
	sorted := append([]*v1.Node(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	taken := []netip.Prefix{}
	if own.IsValid() {
		taken = append(taken, own)
	}
	for _, n := range sorted {
		if n.Name == self {
			continue
		}
		p, ok := peerOf(n)
		if pub, err := netip.ParseAddr(n.Annotations[AnnotationPublicIP]); err == nil && pub.Is4() {
			p.NodeIP = pub
		}
		mac, err := net.ParseMAC(n.Annotations[AnnotationVTEPMAC])
		switch {
		case !ok && n.Spec.PodCIDR == "":
			skipped = append(skipped, Skipped{n.Name, "no spec.podCIDR yet"})
			continue
		case !ok:
			skipped = append(skipped, Skipped{n.Name, fmt.Sprintf("spec.podCIDR %q or its InternalIP is not usable IPv4", n.Spec.PodCIDR)})
			continue
		case err != nil || len(mac) != 6:
			skipped = append(skipped, Skipped{n.Name, "no " + AnnotationVTEPMAC + " annotation yet"})
			continue
		}
		if t := overlapping(taken, p.PodCIDR); t.IsValid() {
			skipped = append(skipped, Skipped{n.Name, fmt.Sprintf("spec.podCIDR %s overlaps %s", p.PodCIDR, t)})
			continue
		}
		taken = append(taken, p.PodCIDR)
		peers = append(peers, VXLANPeer{PodCIDR: p.PodCIDR, VTEP: p.PodCIDR.Addr(), MAC: mac, NodeIP: p.NodeIP})
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].PodCIDR.String() < peers[j].PodCIDR.String() })
	return peers, skipped
}
