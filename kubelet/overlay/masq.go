package overlay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// DefaultClusterCIDR is the cluster CIDR a kubelet assumes when not told (node IPAM's
// default): pod traffic to it is never masqueraded.
const DefaultClusterCIDR = "10.42.0.0/16"

// EnsureMasquerade (re)writes the nftables table name (ip family) with one rule that
// masquerades what the node's pods send outside the cluster CIDR:
//
//	ip saddr <podCIDR> ip daddr != <clusterCIDR> masquerade
//
// The CNI bridge plugin's own ipMasq would masquerade everything leaving the pod subnet,
// pod-to-pod traffic to other nodes included, which hides the source pod from the peer
// (and from its network policies); so the kubelet turns that off and keeps this instead,
// through github.com/google/nftables as the node proxy does.
func EnsureMasquerade(name string, podCIDR, clusterCIDR netip.Prefix) error {
	if !podCIDR.Addr().Is4() || !clusterCIDR.Addr().Is4() {
		return fmt.Errorf("masquerade: pod CIDR %s and cluster CIDR %s must be IPv4", podCIDR, clusterCIDR)
	}
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("masquerade: %w", err)
	}
	t := &nftables.Table{Name: name, Family: nftables.TableFamilyIPv4}
	// Add, flush and fill in one batch: the rule is replaced atomically.
	conn.AddTable(t)
	conn.FlushTable(t)
	ch := conn.AddChain(&nftables.Chain{Name: "postrouting", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
	var e []expr.Any
	e = append(e, prefixMatch(12, podCIDR, expr.CmpOpEq)...)
	e = append(e, prefixMatch(16, clusterCIDR, expr.CmpOpNeq)...)
	e = append(e, &expr.Masq{})
	conn.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: e})
	if err := conn.Flush(); err != nil {
		return fmt.Errorf("masquerade: table %s: %w", name, err)
	}
	return nil
}

// RemoveMasquerade deletes the table; a missing one is fine.
func RemoveMasquerade(name string) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("masquerade: %w", err)
	}
	conn.DelTable(&nftables.Table{Name: name, Family: nftables.TableFamilyIPv4})
	if err := conn.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("masquerade: delete table %s: %w", name, err)
	}
	return nil
}

// prefixMatch compares the IPv4 address at offset in the network header (12 source, 16
// destination) with p.
func prefixMatch(offset uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	mask := net.CIDRMask(p.Bits(), 32)
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte(mask), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: 1, Data: p.Masked().Addr().AsSlice()},
	}
}
