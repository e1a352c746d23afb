package netpol

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/internal/nftbatch"
)

// table writes a Ruleset as one nftables table of the ip family:
//
//	chain forward (filter hook forward, policy accept):
//	    ct state established,related accept
//	    ip saddr @<egress-isolated> jump egress
//	    ip daddr @<ingress-isolated> jump ingress
//	chain egress:  one rule per egress Rule, matched -> goto post-egress; then drop
//	chain post-egress: ip daddr @<ingress-isolated> goto ingress; accept
//	chain ingress: one rule per ingress Rule, matched -> accept; then drop
//
// Pod addresses are in sets (a hash lookup per rule, whatever their size), so 500 policies
// over 100 pods are ~1000 rules and ~600 set elements, and a pod that comes or goes
// changes set contents, not the shape of any rule. Only a connection's first packet walks
// the policy chains: every later one is accepted by the conntrack rule. The whole table is
// replaced in one transaction, so the kernel swaps old rules for new atomically.
type table struct {
	name string
	conn *nftables.Conn
	t    *nftables.Table
}

func newTable(name string, connOpts ...nftables.ConnOption) (*table, error) {
	if name == "" {
		return nil, fmt.Errorf("netpol: table name is empty")
	}
	conn, err := nftables.New(append([]nftables.ConnOption{nftables.WithSockOptions(nftbatch.BigBuffers)}, connOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("netpol: netlink: %w", err)
	}
	return &table{name: name, conn: conn, t: &nftables.Table{Name: name, Family: nftables.TableFamilyIPv4}}, nil
}

// apply replaces the table's contents with rs.
func (t *table) apply(rs Ruleset) error {
	c := t.conn
	c.AddTable(t.t)
	c.DelTable(t.t)
	c.AddTable(t.t)
	sets := map[string]*nftables.Set{}
	for _, s := range rs.Sets {
		set := &nftables.Set{Table: t.t, Name: s.Name, KeyType: nftables.TypeIPAddr}
		elems := make([]nftables.SetElement, len(s.IPs))
		for i, ip := range s.IPs {
			b := ip.As4()
			elems[i] = nftables.SetElement{Key: b[:]}
		}
		if err := c.AddSet(set, elems); err != nil {
			return fmt.Errorf("netpol: set %s: %w", s.Name, err)
		}
		sets[s.Name] = set
	}
	chain := func(name string) *nftables.Chain { return c.AddChain(&nftables.Chain{Name: name, Table: t.t}) }
	rule := func(ch *nftables.Chain, e ...expr.Any) { c.AddRule(&nftables.Rule{Table: t.t, Chain: ch, Exprs: e}) }
	accept := nftables.ChainPolicyAccept
	fwd := c.AddChain(&nftables.Chain{Name: "forward", Table: t.t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	rule(fwd, cat(establishedOrRelated(), []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}})...)
	ingress, egress, postEgress := chain("ingress"), chain("egress"), chain("post-egress")
	if rs.EgressIsolated != "" {
		rule(fwd, cat(lookup(12, sets[rs.EgressIsolated]), verdict(expr.VerdictJump, egress.Name))...)
	}
	if rs.IngressIsolated != "" {
		rule(fwd, cat(lookup(16, sets[rs.IngressIsolated]), verdict(expr.VerdictJump, ingress.Name))...)
		rule(postEgress, cat(lookup(16, sets[rs.IngressIsolated]), verdict(expr.VerdictGoto, ingress.Name))...)
	}
	rule(postEgress, &expr.Verdict{Kind: expr.VerdictAccept})
	for i, r := range rs.Rules {
		local, remote := uint32(16), uint32(12) // ingress: the pod is the destination
		ch, allow := ingress, []expr.Any{&expr.Verdict{Kind: expr.VerdictAccept}}
		if r.Dir == Egress {
			local, remote = 12, 16
			ch, allow = egress, verdict(expr.VerdictGoto, postEgress.Name)
		}
		var m []expr.Any
		if r.Pods != "" {
			m = append(m, lookup(local, sets[r.Pods])...)
		}
		if r.Peer != "" {
			m = append(m, lookup(remote, sets[r.Peer])...)
		}
		if r.PeerCIDR.IsValid() {
			m = append(m, ipIn(remote, r.PeerCIDR)...)
		}
		if r.Proto != "" {
			m = append(m, l4proto(protoNum(r.Proto))...)
		}
		if r.Port != 0 {
			m = append(m, dports(r.Port, r.EndPort)...)
		}
		if len(r.Except) == 0 {
			rule(ch, cat(m, allow)...)
			continue
		}
		// ipBlock except: a chain of its own returns for the excepted ranges.
		sub := chain(fmt.Sprintf("rule-%d", i))
		for _, e := range r.Except {
			rule(sub, cat(ipIn(remote, e), []expr.Any{&expr.Verdict{Kind: expr.VerdictReturn}})...)
		}
		rule(sub, allow...)
		rule(ch, cat(m, verdict(expr.VerdictJump, sub.Name))...)
	}
	rule(ingress, &expr.Verdict{Kind: expr.VerdictDrop})
	rule(egress, &expr.Verdict{Kind: expr.VerdictDrop})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netpol: program table %s (%d sets, %d rules): %w", t.name, len(rs.Sets), len(rs.Rules), err)
	}
	return nil
}

// remove deletes the table if it exists.
func (t *table) remove() error {
	tables, err := t.conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return fmt.Errorf("netpol: list tables: %w", err)
	}
	for _, x := range tables {
		if x.Name == t.name {
			t.conn.DelTable(x)
			if err := t.conn.Flush(); err != nil {
				return fmt.Errorf("netpol: delete table %s: %w", t.name, err)
			}
		}
	}
	return nil
}

func cat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func verdict(kind expr.VerdictKind, chain string) []expr.Any {
	return []expr.Any{&expr.Verdict{Kind: kind, Chain: chain}}
}

// establishedOrRelated is `ct state established,related`.
func establishedOrRelated() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binaryutil.NativeEndian.PutUint32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
	}
}

// lookup is `ip saddr @set` (offset 12) or `ip daddr @set` (16).
func lookup(offset uint32, set *nftables.Set) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID}}
}

// ipIn is `ip saddr|daddr PREFIX`.
func ipIn(offset uint32, p netip.Prefix) []expr.Any {
	mask := net.CIDRMask(p.Bits(), 32)
	a := p.Masked().Addr().As4()
	return []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte(mask), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]}}
}

func l4proto(p byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{p}}}
}

// dports is `th dport PORT` or `th dport PORT-END`.
func dports(port, end int32) []expr.Any {
	load := &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}
	if end == 0 || end == port {
		return []expr.Any{load, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(uint16(port))}}
	}
	return []expr.Any{load, &expr.Range{Op: expr.CmpOpEq, Register: 1,
		FromData: binaryutil.BigEndian.PutUint16(uint16(port)), ToData: binaryutil.BigEndian.PutUint16(uint16(end))}}
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
