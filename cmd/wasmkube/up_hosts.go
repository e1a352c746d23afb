package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	goruntime "runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// DefaultHostNetwork is the private subnet `up --nodes N` puts its hosts on: the bridge
// up creates has the first address, host i the i-th. It is a test network of this
// machine only: nothing routes it anywhere else.
const DefaultHostNetwork = "172.30.0.0/24"

// hostNetwork is the bridge and the network namespaces `up --nodes N` makes, one
// namespace per extra node, each with a veth on the bridge: N hosts on one L2 segment.
type hostNetwork struct {
	bridge string
	subnet netip.Prefix
	hosts  []string // namespace names, hosts[0] is node 2's
}

// hostNetworkPlan checks the subnet and names the addresses: the bridge's (node 1's)
// and each extra host's.
func hostNetworkPlan(cidr string, nodes int) (subnet netip.Prefix, addrs []netip.Addr, err error) {
	subnet, err = netip.ParsePrefix(cidr)
	if err != nil || !subnet.Addr().Is4() || subnet.Masked() != subnet {
		return subnet, nil, fmt.Errorf("--host-network %q: not an IPv4 network such as %s", cidr, DefaultHostNetwork)
	}
	if !subnet.Addr().IsPrivate() {
		return subnet, nil, fmt.Errorf("--host-network %s: must be a private range (10/8, 172.16/12, 192.168/16): up's hosts never leave this machine", cidr)
	}
	a := subnet.Addr().Next()
	for i := 0; i < nodes; i++ {
		if !subnet.Contains(a) || a == lastAddr(subnet) {
			return subnet, nil, fmt.Errorf("--host-network %s: too small for %d hosts", cidr, nodes)
		}
		addrs = append(addrs, a)
		a = a.Next()
	}
	return subnet, addrs, nil
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

func ipNet(a netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(a.AsSlice()), Mask: net.CIDRMask(bits, 32)}
}

// createHostNetwork makes the bridge with addrs[0] and, for each further address, a
// network namespace <bridge>-<i> whose eth0 (a veth on the bridge) has it. On error what
// was made is removed again.
func createHostNetwork(bridge string, subnet netip.Prefix, addrs []netip.Addr) (*hostNetwork, error) {
	if len(bridge) > 12 {
		return nil, fmt.Errorf("--host-bridge %q: at most 12 bytes (its veths are named <bridge>v<n>)", bridge)
	}
	h := &hostNetwork{bridge: bridge, subnet: subnet}
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: bridge}}
	if err := netlink.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("host bridge %s: %w (is another up using it? choose --host-bridge)", bridge, err)
	}
	fail := func(err error) (*hostNetwork, error) { h.remove(); return nil, err }
	if err := netlink.AddrAdd(br, &netlink.Addr{IPNet: ipNet(addrs[0], subnet.Bits())}); err != nil {
		return fail(fmt.Errorf("host bridge %s: address %s: %w", bridge, addrs[0], err))
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fail(fmt.Errorf("host bridge %s: %w", bridge, err))
	}
	for i, a := range addrs[1:] {
		name := fmt.Sprintf("%s-%d", bridge, i+2)
		h.hosts = append(h.hosts, name)
		if err := addHost(name, fmt.Sprintf("%sv%d", bridge, i+2), br, a, subnet.Bits()); err != nil {
			return fail(fmt.Errorf("host %s: %w", name, err))
		}
	}
	return h, nil
}

// addHost makes the named network namespace and its eth0 with addr, a veth whose other
// end (hostSide) is on the bridge.
func addHost(name, hostSide string, br netlink.Link, addr netip.Addr, bits int) error {
	ns, err := newNamedNetNS(name)
	if err != nil {
		return err
	}
	defer ns.Close()
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: hostSide, MasterIndex: br.Attrs().Index},
		PeerName: "eth0", PeerNamespace: netlink.NsFd(int(ns))}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("veth %s: %w", hostSide, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("veth %s: %w", hostSide, err)
	}
	nh, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer nh.Close()
	for _, l := range []string{"lo", "eth0"} {
		link, err := nh.LinkByName(l)
		if err != nil {
			return fmt.Errorf("%s: %w", l, err)
		}
		if l == "eth0" {
			if err := nh.AddrAdd(link, &netlink.Addr{IPNet: ipNet(addr, bits)}); err != nil {
				return fmt.Errorf("eth0 address %s: %w", addr, err)
			}
		}
		if err := nh.LinkSetUp(link); err != nil {
			return fmt.Errorf("%s up: %w", l, err)
		}
	}
	return nil
}

// newNamedNetNS makes /run/netns/<name> (what `ip netns exec` finds) on a thread of its
// own, which is left locked and so retired with its goroutine: netns.NewNamed moves the
// calling thread into the new namespace.
func newNamedNetNS(name string) (netns.NsHandle, error) {
	type result struct {
		ns  netns.NsHandle
		err error
	}
	ch := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		ns, err := netns.NewNamed(name)
		ch <- result{ns, err}
	}()
	r := <-ch
	if r.err != nil {
		return 0, fmt.Errorf("network namespace %s: %w", name, r.err)
	}
	return r.ns, nil
}

// remove deletes the namespaces (their veths go with them) and the bridge; what is
// already gone is fine.
func (h *hostNetwork) remove() error {
	var errs []error
	for i, name := range h.hosts {
		if l, err := netlink.LinkByName(fmt.Sprintf("%sv%d", h.bridge, i+2)); err == nil {
			_ = netlink.LinkDel(l)
		}
		if err := netns.DeleteNamed(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("network namespace %s: %w", name, err))
		}
	}
	if l, err := netlink.LinkByName(h.bridge); err == nil {
		if err := netlink.LinkDel(l); err != nil {
			errs = append(errs, fmt.Errorf("host bridge %s: %w", h.bridge, err))
		}
	}
	return errors.Join(errs...)
}
