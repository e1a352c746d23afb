package netpol

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Direction is which side of a connection a rule checks.
type Direction string

const (
	Ingress Direction = "ingress"
	Egress  Direction = "egress"
)

// Ruleset is what the node's table holds, computed by Plan. It is a value (no I/O), so what
// the enforcer programs can be table-tested.
type Ruleset struct {
	// Sets are named sets of pod IPv4 addresses, each content once (policies selecting
	// the same pods share a set), sorted by name.
	Sets []Set
	// IngressIsolated and EgressIsolated name the sets of pods that some policy isolates
	// in that direction ("" when none is).
	IngressIsolated, EgressIsolated string
	// Rules allow traffic to (Ingress) or from (Egress) isolated pods; in policy order.
	Rules []Rule
}

// Set is a named set of addresses.
type Set struct {
	Name string
	IPs  []netip.Addr // sorted
}

// Rule allows one kind of traffic: to the pods of set Pods (Ingress) or from them (Egress),
// from or to a peer, on a port. Every empty field matches anything.
type Rule struct {
	Policy string // namespace/name, for logs and tests
	Dir    Direction
	Pods   string // set of the policy's pods (the local side of the rule)
	// Peer is the set of peer pods, PeerCIDR (with Except) an ipBlock; when both are set
	// (an egress named port towards an ipBlock) the peer must be in both.
	Peer     string
	PeerCIDR netip.Prefix
	Except   []netip.Prefix
	Proto    v1.Protocol // "" any
	Port     int32       // 0: any
	EndPort  int32       // 0: just Port
}

// Plan computes the Ruleset that enforces policies over pods (every pod of the cluster with
// an IP, wherever it runs: a policy follows its pods' addresses, so the node of either end
// of a connection can check it) and namespaces (for namespaceSelector), as upstream's
// NetworkPolicy semantics define:
//   - a pod selected by a policy with Ingress (Egress) in policyTypes is isolated in that
//     direction; traffic to (from) it is allowed only when some rule of some policy
//     selecting it allows it; pods no policy isolates are open;
//   - a rule's peers are ORed (podSelector in the policy's namespace, namespaceSelector,
//     both together, ipBlock with except); no peers is any peer; its ports are ORed, with
//     named ports resolved against the pod that receives the traffic and endPort ranges;
//     no ports is any port.
//
// Pods on the host network are neither selected nor peers (their address is the node's).
func Plan(policies []*networkingv1.NetworkPolicy, pods []*v1.Pod, namespaces []*v1.Namespace) Ruleset {
	b := &builder{sets: map[string]string{}, nsLabels: map[string]labels.Set{}}
	for _, ns := range namespaces {
		b.nsLabels[ns.Name] = ns.Labels
	}
	for _, p := range pods {
		ip, err := netip.ParseAddr(p.Status.PodIP)
		if err != nil || !ip.Is4() || p.Spec.HostNetwork || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		b.pods = append(b.pods, pod{p: p, ip: ip})
	}
	sort.Slice(b.pods, func(i, j int) bool { return b.pods[i].ip.Less(b.pods[j].ip) })
	policies = append([]*networkingv1.NetworkPolicy(nil), policies...)
	sort.Slice(policies, func(i, j int) bool {
		return policies[i].Namespace+"/"+policies[i].Name < policies[j].Namespace+"/"+policies[j].Name
	})

	var rs Ruleset
	var ingressIso, egressIso []pod
	for _, np := range policies {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			continue // validation refuses these
		}
		selected := b.filter(func(p pod) bool { return p.p.Namespace == np.Namespace && sel.Matches(labels.Set(p.p.Labels)) })
		if len(selected) == 0 {
			continue
		}
		name := np.Namespace + "/" + np.Name
		ingress, egress := policyTypes(np)
		if ingress {
			ingressIso = append(ingressIso, selected...)
			for _, r := range np.Spec.Ingress {
				rs.Rules = append(rs.Rules, b.rules(name, Ingress, np.Namespace, selected, r.From, r.Ports)...)
			}
		}
		if egress {
			egressIso = append(egressIso, selected...)
			for _, r := range np.Spec.Egress {
				rs.Rules = append(rs.Rules, b.rules(name, Egress, np.Namespace, selected, r.To, r.Ports)...)
			}
		}
	}
	if len(ingressIso) > 0 {
		rs.IngressIsolated = b.set(ingressIso)
	}
	if len(egressIso) > 0 {
		rs.EgressIsolated = b.set(egressIso)
	}
	rs.Sets = b.out
	sort.Slice(rs.Sets, func(i, j int) bool { return rs.Sets[i].Name < rs.Sets[j].Name })
	return rs
}

// policyTypes are the directions np isolates: its policyTypes, or as upstream defaults
// them, Ingress always and Egress when it has egress rules.
func policyTypes(np *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(np.Spec.PolicyTypes) == 0 {
		return true, len(np.Spec.Egress) > 0
	}
	for _, t := range np.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

type pod struct {
	p  *v1.Pod
	ip netip.Addr
}

type builder struct {
	pods     []pod
	nsLabels map[string]labels.Set
	sets     map[string]string // content key -> name
	out      []Set
}

func (b *builder) filter(keep func(pod) bool) []pod {
	var out []pod
	for _, p := range b.pods {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// set names the set holding pods' addresses, made once per content.
func (b *builder) set(pods []pod) string {
	ips := make([]netip.Addr, 0, len(pods))
	seen := map[netip.Addr]bool{}
	for _, p := range pods {
		if !seen[p.ip] {
			seen[p.ip] = true
			ips = append(ips, p.ip)
		}
	}
	sort.Slice(ips, func(i, j int) bool { return ips[i].Less(ips[j]) })
	var key strings.Builder
	for _, ip := range ips {
		key.WriteString(ip.String())
		key.WriteByte(',')
	}
	if name, ok := b.sets[key.String()]; ok {
		return name
	}
	name := fmt.Sprintf("pods-%d", len(b.out))
	b.sets[key.String()] = name
	b.out = append(b.out, Set{Name: name, IPs: ips})
	return name
}

// peerSpec is one peer of a rule after selection: pods, a CIDR, or anything.
type peerSpec struct {
	any   bool
	pods  []pod
	cidr  netip.Prefix
	block bool
	exc   []netip.Prefix
}

func (b *builder) peers(ns string, peers []networkingv1.NetworkPolicyPeer) []peerSpec {
	if len(peers) == 0 {
		return []peerSpec{{any: true}}
	}
	var out []peerSpec
	for _, pr := range peers {
		if pr.IPBlock != nil {
			cidr, err := netip.ParsePrefix(pr.IPBlock.CIDR)
			if err != nil || !cidr.Addr().Is4() {
				continue
			}
			ps := peerSpec{block: true, cidr: cidr.Masked()}
			for _, e := range pr.IPBlock.Except {
				if ex, err := netip.ParsePrefix(e); err == nil && ex.Addr().Is4() {
					ps.exc = append(ps.exc, ex.Masked())
				}
			}
			out = append(out, ps)
			continue
		}
		podSel, nsSel := labels.Everything(), labels.Nothing()
		if pr.PodSelector != nil {
			s, err := metav1.LabelSelectorAsSelector(pr.PodSelector)
			if err != nil {
				continue
			}
			podSel = s
		}
		sameNS := pr.NamespaceSelector == nil
		if !sameNS {
			s, err := metav1.LabelSelectorAsSelector(pr.NamespaceSelector)
			if err != nil {
				continue
			}
			nsSel = s
		}
		out = append(out, peerSpec{pods: b.filter(func(p pod) bool {
			if sameNS {
				if p.p.Namespace != ns {
					return false
				}
			} else if !nsSel.Matches(b.nsLabels[p.p.Namespace]) {
				return false
			}
			return podSel.Matches(labels.Set(p.p.Labels))
		})})
	}
	return out
}

// portSpec is one port of a rule; name is a named port, resolved per receiving pod.
type portSpec struct {
	proto         v1.Protocol
	port, endPort int32
	name          string
}

func ports(ps []networkingv1.NetworkPolicyPort) []portSpec {
	if len(ps) == 0 {
		return []portSpec{{}}
	}
	var out []portSpec
	for _, p := range ps {
		s := portSpec{proto: v1.ProtocolTCP}
		if p.Protocol != nil {
			s.proto = *p.Protocol
		}
		if p.Port != nil {
			if p.Port.Type == intstr.String {
				s.name = p.Port.StrVal
			} else {
				s.port = p.Port.IntVal
				if p.EndPort != nil && *p.EndPort > s.port {
					s.endPort = *p.EndPort
				}
			}
		}
		out = append(out, s)
	}
	return out
}

// namedPort resolves name on p for proto: its container port of that name.
func namedPort(p *v1.Pod, name string, proto v1.Protocol) (int32, bool) {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			cproto := cp.Protocol
			if cproto == "" {
				cproto = v1.ProtocolTCP
			}
			if cp.Name == name && cproto == proto {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// rules expands one ingress or egress rule of a policy into Rules: peers x ports, with a
// named port split by the number it resolves to on the receiving side (the policy's pods
// for ingress, the peers for egress; an ipBlock or any peer on egress resolves against
// every pod, as the address may be any of them).
func (b *builder) rules(policy string, dir Direction, ns string, selected []pod,
	peers []networkingv1.NetworkPolicyPeer, pps []networkingv1.NetworkPolicyPort) []Rule {
	var out []Rule
	for _, peer := range b.peers(ns, peers) {
		if !peer.any && !peer.block && len(peer.pods) == 0 {
			continue // selects no pod now
		}
		for _, port := range ports(pps) {
			base := Rule{Policy: policy, Dir: dir, Proto: port.proto, Port: port.port, EndPort: port.endPort}
			if peer.block {
				base.PeerCIDR, base.Except = peer.cidr, peer.exc
			}
			local, remote := selected, peer.pods
			if port.name == "" {
				r := base
				r.Pods = b.set(local)
				if !peer.any && !peer.block {
					r.Peer = b.set(remote)
				}
				out = append(out, r)
				continue
			}
			// Named port: group the receiving side by the number it resolves to.
			receiving := local
			if dir == Egress {
				receiving = remote
				if peer.any || peer.block {
					receiving = b.pods
				}
			}
			byNum := map[int32][]pod{}
			var nums []int32
			for _, p := range receiving {
				if n, ok := namedPort(p.p, port.name, port.proto); ok {
					if _, seen := byNum[n]; !seen {
						nums = append(nums, n)
					}
					byNum[n] = append(byNum[n], p)
				}
			}
			sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
			for _, n := range nums {
				r := base
				r.Port = n
				if dir == Ingress {
					r.Pods = b.set(byNum[n])
					if !peer.any && !peer.block {
						r.Peer = b.set(remote)
					}
				} else {
					r.Pods = b.set(local)
					// The destination must be a pod on which the name means n.
					r.Peer = b.set(byNum[n])
					if peer.block {
						// Both: in the block and such a pod.
						r.PeerCIDR, r.Except = peer.cidr, peer.exc
					}
				}
				out = append(out, r)
			}
		}
	}
	return out
}
