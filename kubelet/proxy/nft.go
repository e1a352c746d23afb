package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"reflect"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/internal/nftbatch"
)

// masqMark is the packet mark bit that asks the postrouting chain to masquerade a
// connection (upstream kube-proxy's bit). It is set only on packets bound for this table's
// services and cleared again before the packet leaves.
const masqMark = 0x4000

// Network is where the table applies: the node's pod bridge and subnet, the addresses its
// NodePorts and hostPorts answer on, and the service range to keep on the machine.
type Network struct {
	Bridge      string   // pods' bridge; ClusterIP rules match packets arriving from it
	PodCIDR     string   // the node's pod subnet; ClusterIP rules match its sources
	ServiceCIDR string   // packets to it that no rule translated are refused, never routed
	NodeIPs     []string // NodePorts and hostPorts answer on these (the bridge's gateway, the node IP)
	// MasqueradeAll masquerades every connection to a service from a pod, for hosts where
	// bridged replies skip conntrack (br_netfilter not loaded): without it a backend on the
	// same bridge would answer the client directly from its own address.
	MasqueradeAll bool
}

// table writes a Ruleset as one nftables table, replacing the whole table in one
// transaction: the kernel swaps old rules for new atomically, and established connections
// keep their translation (it lives in conntrack, not in the rules).
type table struct {
	name string
	net  Network
	// parsed Network
	bridge      []byte // IFNAMSIZ, NUL padded
	podNet      *net.IPNet
	serviceNet  *net.IPNet
	nodeIPs     []net.IP
	conn        *nftables.Conn
	t           *nftables.Table
	chainsCount int
	last        *Ruleset // what the table holds; nil: unknown
}

func newTable(name string, n Network, connOpts ...nftables.ConnOption) (*table, error) {
	if len(n.Bridge) == 0 || len(n.Bridge) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("proxy: bridge name %q must be 1-15 bytes", n.Bridge)
	}
	_, podNet, err := net.ParseCIDR(n.PodCIDR)
	if err != nil || podNet.IP.To4() == nil {
		return nil, fmt.Errorf("proxy: pod CIDR %q must be an IPv4 CIDR", n.PodCIDR)
	}
	_, svcNet, err := net.ParseCIDR(n.ServiceCIDR)
	if err != nil || svcNet.IP.To4() == nil {
		return nil, fmt.Errorf("proxy: service CIDR %q must be an IPv4 CIDR", n.ServiceCIDR)
	}
	t := &table{name: name, net: n, podNet: podNet, serviceNet: svcNet}
	t.bridge = make([]byte, unix.IFNAMSIZ)
	copy(t.bridge, n.Bridge)
	for _, s := range n.NodeIPs {
		ip := net.ParseIP(s).To4()
		if ip == nil {
			return nil, fmt.Errorf("proxy: node IP %q is not an IPv4 address", s)
		}
		if ip.IsLoopback() {
			continue // a pod's 127.0.0.1 is its own; the host's is not for DNAT
		}
		t.nodeIPs = append(t.nodeIPs, ip)
	}
	conn, err := nftables.New(append([]nftables.ConnOption{nftables.WithSockOptions(nftbatch.BigBuffers)}, connOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("proxy: netlink: %w", err)
	}
	t.conn = conn
	t.t = &nftables.Table{Name: name, Family: nftables.TableFamilyIPv4}
	return t, nil
}

// apply makes the table hold rs: the changed service chains alone when only endpoints
// changed, else the whole table.
func (t *table) apply(rs Ruleset) error {
	ok, err := t.applyEndpoints(rs)
	if !ok {
		err = t.applyAll(rs)
	}
	if err != nil {
		t.last = nil // unknown state: the next apply rewrites everything
		return err
	}
	// a copy: the caller may reuse its slices
	t.last = &Ruleset{Services: append([]ServicePort(nil), rs.Services...), HostPorts: append([]HostPort(nil), rs.HostPorts...)}
	return nil
}

// applyAll replaces the table's contents with rs.
func (t *table) applyAll(rs Ruleset) error {
	c := t.conn
	// add + delete + add: deletes the old table whether or not it exists, in the same
	// transaction as the new one (a table cannot be replaced in place).
	c.AddTable(t.t)
	c.DelTable(t.t)
	c.AddTable(t.t)
	t.chainsCount = 0
	chain := func(name string) *nftables.Chain {
		t.chainsCount++
		return c.AddChain(&nftables.Chain{Name: name, Table: t.t})
	}
	base := func(name string, typ nftables.ChainType, hook *nftables.ChainHook, prio *nftables.ChainPriority) *nftables.Chain {
		t.chainsCount++
		return c.AddChain(&nftables.Chain{Name: name, Table: t.t, Type: typ, Hooknum: hook, Priority: prio})
	}
	rule := func(ch *nftables.Chain, e ...expr.Any) { c.AddRule(&nftables.Rule{Table: t.t, Chain: ch, Exprs: e}) }

	services := chain("services")
	nodePorts := chain("nodeports")
	external := chain("external")
	masq := chain("mark-for-masquerade")
	rule(masq, setMark()...)

	pre := base("prerouting", nftables.ChainTypeNAT, nftables.ChainHookPrerouting, nftables.ChainPriorityNATDest)
	rule(pre, cat(iifname(t.bridge), saddrIn(t.podNet), jump(services.Name))...)
	out := base("output", nftables.ChainTypeNAT, nftables.ChainHookOutput, nftables.ChainPriorityNATDest)
	rule(out, jump(services.Name)...)
	// External IPs and LoadBalancer ingress IPs: from anywhere (pods, the host, other hosts).
	rule(pre, jump(external.Name)...)
	rule(out, jump(external.Name)...)
	for _, ip := range t.nodeIPs {
		rule(pre, cat(daddr(ip), jump(nodePorts.Name))...)
		rule(out, cat(daddr(ip), jump(nodePorts.Name))...)
	}
	post := base("postrouting", nftables.ChainTypeNAT, nftables.ChainHookPostrouting, nftables.ChainPriorityNATSource)
	rule(post, cat(markSet(), clearMark(), []expr.Any{&expr.Masq{}})...)

	// Anything still addressed to the service range after DNAT had no backend: refuse it
	// here, before routing could send it to the default gateway.
	for _, hook := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"filter-forward", nftables.ChainHookForward}, {"filter-output", nftables.ChainHookOutput}} {
		f := base(hook.name, nftables.ChainTypeFilter, hook.hook, nftables.ChainPriorityFilter)
		rule(f, cat(daddrIn(t.serviceNet), l4proto(unix.IPPROTO_TCP), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}})...)
		rule(f, cat(daddrIn(t.serviceNet), []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: 3}})...) // port unreachable
	}

	for i, sp := range rs.Services {
		if len(sp.Endpoints) == 0 {
			continue // left to the filter chains (ClusterIP) or the host (NodePort): refused
		}
		proto := protoNum(sp.Protocol)
		svc := chain("svc-" + sp.Name)
		if sp.ClusterIP != "" {
			rule(services, cat(daddr(net.ParseIP(sp.ClusterIP).To4()), l4proto(proto), dport(sp.Port), jump(svc.Name))...)
		}
		if sp.NodePort != 0 {
			// Masqueraded (externalTrafficPolicy Cluster, as kube-proxy): a backend on
			// another host would otherwise answer the client directly, from an address
			// the client never connected to.
			rule(nodePorts, cat(l4proto(proto), dport(sp.NodePort), setMark(), jump(svc.Name))...)
		}
		for _, ext := range sp.ExternalIPs {
			// Masqueraded like NodePort traffic from outside, so a backend on another
			// node answers through this one.
			rule(external, cat(daddr(net.ParseIP(ext).To4()), l4proto(proto), dport(sp.Port), setMark(), jump(svc.Name))...)
		}
		if sp.Affinity > 0 {
			if t.net.MasqueradeAll {
				rule(svc, cat(saddrIn(t.podNet), jump(masq.Name))...)
			}
			if err := t.affinity(svc, sp, i, proto, chain, rule); err != nil {
				return err
			}
			continue
		}
		t.randomChain(svc, sp)
	}
	for _, hp := range rs.HostPorts {
		podIP := net.ParseIP(hp.PodIP).To4()
		if podIP == nil {
			continue
		}
		var match []expr.Any
		if hp.HostIP != "" {
			ip := net.ParseIP(hp.HostIP).To4()
			if ip == nil {
				continue
			}
			match = daddr(ip)
		}
		proto := protoNum(hp.Protocol)
		rule(nodePorts, cat(match, l4proto(proto), dport(hp.HostPort), saddr(podIP), setMark())...)
		rule(nodePorts, cat(match, l4proto(proto), dport(hp.HostPort), dnat(podIP, hp.ContainerPort))...)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("proxy: program table %s (%d services, %d hostPorts): %w", t.name, len(rs.Services), len(rs.HostPorts), err)
	}
	return nil
}

// randomChain writes the rules of a sessionAffinity None service's chain.
func (t *table) randomChain(svc *nftables.Chain, sp ServicePort) {
	rule := func(e ...expr.Any) { t.conn.AddRule(&nftables.Rule{Table: t.t, Chain: svc, Exprs: e}) }
	if t.net.MasqueradeAll {
		rule(cat(saddrIn(t.podNet), jump("mark-for-masquerade"))...)
	}
	// A pod reaching itself through its Service (hairpin) must see the reply come from
	// the gateway, not from its own address.
	for _, ep := range sp.Endpoints {
		rule(cat(saddr(net.ParseIP(ep.IP).To4()), jump("mark-for-masquerade"))...)
	}
	// Uniform choice with one random draw per rule: the i-th of n rules takes 1/(n-i)
	// of what reaches it. Only a connection's first packet walks this chain.
	n := len(sp.Endpoints)
	for j, ep := range sp.Endpoints {
		var e []expr.Any
		if j < n-1 {
			e = randomIsZero(uint32(n - j))
		}
		rule(cat(e, dnat(net.ParseIP(ep.IP).To4(), ep.Port))...)
	}
}

// applyEndpoints rewrites, in one transaction, only the chains of services whose
// endpoints changed, when nothing else did (the common case: a pod turned ready or
// unready); ok is false when the change needs a full rewrite (a Service or hostPort came
// or went, a service gained its first or lost its last endpoint, a ClientIP service's
// endpoints changed: their chains and sets follow the endpoints).
func (t *table) applyEndpoints(rs Ruleset) (ok bool, err error) {
	if t.last == nil || len(rs.Services) != len(t.last.Services) || !reflect.DeepEqual(rs.HostPorts, t.last.HostPorts) {
		return false, nil
	}
	var changed []ServicePort
	for i, sp := range rs.Services {
		old := t.last.Services[i]
		if reflect.DeepEqual(sp, old) {
			continue
		}
		sameShape := sp.Name == old.Name && sp.ClusterIP == old.ClusterIP && sp.Protocol == old.Protocol && sp.Port == old.Port &&
			sp.NodePort == old.NodePort && slices.Equal(sp.ExternalIPs, old.ExternalIPs) && sp.Affinity == 0 && old.Affinity == 0 && (len(sp.Endpoints) == 0) == (len(old.Endpoints) == 0)
		if !sameShape {
			return false, nil
		}
		changed = append(changed, sp)
	}
	for _, sp := range changed {
		svc := &nftables.Chain{Name: "svc-" + sp.Name, Table: t.t}
		t.conn.FlushChain(svc)
		t.randomChain(svc, sp)
	}
	if err := t.conn.Flush(); err != nil {
		return true, fmt.Errorf("proxy: program table %s (%d services changed): %w", t.name, len(changed), err)
	}
	return true, nil
}

// affinity writes a ClientIP service as upstream's nftables mode does: one chain and one
// timed set of client addresses per endpoint; a client found in an endpoint's set goes
// back to it (and refreshes its entry), a new one is spread at random.
func (t *table) affinity(svc *nftables.Chain, sp ServicePort, idx int, proto byte,
	chain func(string) *nftables.Chain, rule func(*nftables.Chain, ...expr.Any)) error {
	n := len(sp.Endpoints)
	epChains := make([]*nftables.Chain, n)
	sets := make([]*nftables.Set, n)
	for j, ep := range sp.Endpoints {
		ip := net.ParseIP(ep.IP).To4()
		sets[j] = &nftables.Set{Table: t.t, Name: fmt.Sprintf("aff-%d-%d", idx, j), KeyType: nftables.TypeIPAddr,
			Dynamic: true, HasTimeout: true, Timeout: sp.Affinity}
		if err := t.conn.AddSet(sets[j], nil); err != nil {
			return fmt.Errorf("proxy: affinity set of %s: %w", sp.Name, err)
		}
		epChains[j] = chain(fmt.Sprintf("svc-%s/%s:%d", sp.Name, ep.IP, ep.Port))
		rule(epChains[j], cat(saddr(ip), setMark())...)
		rule(epChains[j], &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Dynset{SrcRegKey: 1, SetName: sets[j].Name, SetID: sets[j].ID, Operation: unix.NFT_DYNSET_OP_UPDATE, Timeout: sp.Affinity})
		rule(epChains[j], dnat(ip, ep.Port)...)
	}
	for j := range sp.Endpoints {
		rule(svc, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Lookup{SourceRegister: 1, SetName: sets[j].Name, SetID: sets[j].ID},
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: epChains[j].Name})
	}
	for j := range sp.Endpoints {
		var e []expr.Any
		if j < n-1 {
			e = randomIsZero(uint32(n - j))
		}
		rule(svc, cat(e, []expr.Any{&expr.Verdict{Kind: expr.VerdictGoto, Chain: epChains[j].Name}})...)
	}
	return nil
}

// removeTable deletes table name if it exists.
func removeTable(conn *nftables.Conn, name string) error {
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("proxy: list tables: %w", err)
	}
	for _, x := range tables {
		if x.Name == name {
			conn.DelTable(x)
			if err := conn.Flush(); err != nil {
				return fmt.Errorf("proxy: delete table %s: %w", name, err)
			}
		}
	}
	return nil
}

func protoNum(p v1.Protocol) byte {
	switch p {
	case v1.ProtocolUDP:
		return unix.IPPROTO_UDP
	case v1.ProtocolSCTP:
		return unix.IPPROTO_SCTP
	}
	return unix.IPPROTO_TCP
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func iifname(padded []byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: padded}}
}

func ipField(offset uint32, ip net.IP) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ip.To4()}}
}

func ipFieldIn(offset uint32, n *net.IPNet) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte(n.Mask), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: n.IP.To4()}}
}

func saddr(ip net.IP) []expr.Any      { return ipField(12, ip) }
func daddr(ip net.IP) []expr.Any      { return ipField(16, ip) }
func saddrIn(n *net.IPNet) []expr.Any { return ipFieldIn(12, n) }
func daddrIn(n *net.IPNet) []expr.Any { return ipFieldIn(16, n) }

func l4proto(p byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}}}
}

func dport(p int32) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(uint16(p))}}
}

func jump(chain string) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: expr.VerdictJump, Chain: chain}}
}

func randomIsZero(mod uint32) []expr.Any {
	return []expr.Any{&expr.Numgen{Register: 1, Modulus: mod, Type: unix.NFT_NG_RANDOM},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{0, 0, 0, 0}}}
}

// setMark is `meta mark set mark | masqMark`.
func setMark() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^uint32(masqMark)), Xor: binaryutil.NativeEndian.PutUint32(masqMark)},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1}}
}

// markSet is `meta mark & masqMark != 0`.
func markSet() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(masqMark), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}}}
}

// clearMark is `meta mark set mark & ^masqMark`, so the bit does not travel on.
func clearMark() []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyMARK, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(^uint32(masqMark)), Xor: []byte{0, 0, 0, 0}},
		&expr.Meta{Key: expr.MetaKeyMARK, SourceRegister: true, Register: 1}}
}

func dnat(ip net.IP, port int32) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: ip.To4()},
		&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(uint16(port))},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true}}
}

// TableName is a table name for a node on bridge: "wasmkube-BRIDGE-" and 8 hex digits of
// key's hash (the kubelet's root dir), so kubelets sharing a machine and a bridge never
// share a table, and one restarted on the same root replaces its predecessor's.
func TableName(bridge, key string) string {
	h := sha256.Sum256([]byte(key))
	return "wasmkube-" + bridge + "-" + hex.EncodeToString(h[:4])
}
