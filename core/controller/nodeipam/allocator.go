package nodeipam

import (
	"fmt"
	"net/netip"
)

// Defaults of the cluster CIDR and the per-node mask: k3s's 10.42.0.0/16 cut in /24s
// (256 nodes of 254 pods each).
const (
	DefaultClusterCIDR  = "10.42.0.0/16"
	DefaultNodeMaskSize = 24
)

// Allocator hands out the per-node subnets of one IPv4 cluster CIDR: the next free one
// after the last it gave, as upstream's range allocator's CIDR set does, so that a subnet
// just released (its node deleted, its routes perhaps still draining) is not the next given. It does no I/O and is not safe for
// concurrent use; the controller serialises it.
type Allocator struct {
	cluster  netip.Prefix
	maskSize int
	size     int            // number of node subnets in the cluster CIDR
	used     map[int]string // subnet index -> node
	byNode   map[string]int // node -> subnet index
	next     int            // where the search for a free subnet starts
}

// NewAllocator checks the cluster CIDR and the node mask size (larger than the cluster
// CIDR's, at most /30 so that a node has room for a gateway and pods, and at most 2^16
// subnets).
func NewAllocator(clusterCIDR string, maskSize int) (*Allocator, error) {
	p, err := netip.ParsePrefix(clusterCIDR)
	if err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("cluster CIDR %q: not an IPv4 CIDR such as %s", clusterCIDR, DefaultClusterCIDR)
	}
	if p.Masked() != p {
		return nil, fmt.Errorf("cluster CIDR %q: host bits set (did you mean %s?)", clusterCIDR, p.Masked())
	}
	if maskSize <= p.Bits() || maskSize > 30 {
		return nil, fmt.Errorf("node CIDR mask size %d: must be longer than the cluster CIDR's /%d and at most 30", maskSize, p.Bits())
	}
	if maskSize-p.Bits() > 16 {
		return nil, fmt.Errorf("node CIDR mask size %d: the cluster CIDR %s would hold more than 65536 node subnets; use a smaller mask size", maskSize, p)
	}
	return &Allocator{cluster: p, maskSize: maskSize, size: 1 << (maskSize - p.Bits()),
		used: map[int]string{}, byNode: map[string]int{}}, nil
}

// ClusterCIDR is the range the allocator cuts.
func (a *Allocator) ClusterCIDR() netip.Prefix { return a.cluster }

// Free is the number of node subnets not in use.
func (a *Allocator) Free() int { return a.size - len(a.used) }

// ExhaustedError: every node subnet of the cluster CIDR is in use.
type ExhaustedError struct {
	ClusterCIDR netip.Prefix
	MaskSize    int
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("no free /%d left in the cluster CIDR %s (every node subnet is in use; widen the cluster CIDR or remove nodes)", e.MaskSize, e.ClusterCIDR)
}

// OutOfRangeError: a node's subnet is not one of the cluster CIDR's node subnets.
type OutOfRangeError struct {
	Node, CIDR string
	Allocator  *Allocator
}

func (e *OutOfRangeError) Error() string {
	return fmt.Sprintf("node %s: pod CIDR %s is not a /%d inside the cluster CIDR %s", e.Node, e.CIDR, e.Allocator.maskSize, e.Allocator.cluster)
}

// ConflictError: a node's subnet is already another node's.
type ConflictError struct {
	Node, CIDR, Owner string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("node %s: pod CIDR %s is already node %s's", e.Node, e.CIDR, e.Owner)
}

// index is the position of cidr among the node subnets, or an OutOfRangeError.
func (a *Allocator) index(node, cidr string) (int, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Bits() != a.maskSize || p.Masked() != p || !a.cluster.Contains(p.Addr()) {
		return 0, &OutOfRangeError{Node: node, CIDR: cidr, Allocator: a}
	}
	return int((addrUint(p.Addr()) - addrUint(a.cluster.Addr())) >> (32 - a.maskSize)), nil
}

func addrUint(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// subnet is the node subnet at index i.
func (a *Allocator) subnet(i int) netip.Prefix {
	v := addrUint(a.cluster.Addr()) + uint32(i)<<(32-a.maskSize)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), a.maskSize)
}

// Occupy records that node holds cidr (a Node that already has its spec.podCIDR). It is
// idempotent for the same node and subnet; a subnet outside the cluster CIDR is an
// OutOfRangeError, one held by another node a ConflictError.
func (a *Allocator) Occupy(node, cidr string) error {
	i, err := a.index(node, cidr)
	if err != nil {
		return err
	}
	if owner, ok := a.used[i]; ok {
		if owner == node {
			return nil
		}
		return &ConflictError{Node: node, CIDR: cidr, Owner: owner}
	}
	if old, ok := a.byNode[node]; ok {
		delete(a.used, old)
	}
	a.used[i], a.byNode[node] = node, i
	return nil
}

// Allocate gives node a free subnet (the one it already holds, if any), or an
// ExhaustedError.
func (a *Allocator) Allocate(node string) (netip.Prefix, error) {
	if i, ok := a.byNode[node]; ok {
		return a.subnet(i), nil
	}
	for n := 0; n < a.size; n++ {
		i := (a.next + n) % a.size
		if _, ok := a.used[i]; !ok {
			a.used[i], a.byNode[node] = node, i
			a.next = (i + 1) % a.size
			return a.subnet(i), nil
		}
	}
	return netip.Prefix{}, &ExhaustedError{ClusterCIDR: a.cluster, MaskSize: a.maskSize}
}

// Release frees node's subnet, if it holds one, and reports whether it did.
func (a *Allocator) Release(node string) bool {
	i, ok := a.byNode[node]
	if !ok {
		return false
	}
	delete(a.byNode, node)
	delete(a.used, i)
	return true
}
