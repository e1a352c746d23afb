package overlay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RouteProtocol tags the routes wasmkube keeps (rtnetlink's rtm_protocol; `ip route`
// shows it as "proto 87"): a restarted kubelet finds and replaces its predecessor's, and
// never touches routes it did not make.
const RouteProtocol netlink.RouteProtocol = 87

// NodeLinkError: no interface of this host carries the node's IP.
type NodeLinkError struct{ NodeIP string }

func (e *NodeLinkError) Error() string {
	return fmt.Sprintf("no interface of this host has the node IP %s (set --node-ip to an address of this host)", e.NodeIP)
}

// NodeLink is the interface that carries nodeIP and that address's subnet.
func NodeLink(nodeIP netip.Addr) (netlink.Link, netip.Prefix, error) {
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, netip.Prefix{}, fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok || ip != nodeIP {
			continue
		}
		ones, _ := a.Mask.Size()
		link, err := netlink.LinkByIndex(a.LinkIndex)
		if err != nil {
			return nil, netip.Prefix{}, fmt.Errorf("interface of %s: %w", nodeIP, err)
		}
		return link, netip.PrefixFrom(ip, ones).Masked(), nil
	}
	return nil, netip.Prefix{}, &NodeLinkError{NodeIP: nodeIP.String()}
}

// hostGW makes the kernel's routes over one interface match a plan. With onlink the
// gateways need not be on a subnet of the interface (the vxlan device's peers).
type hostGW struct {
	link   netlink.Link
	onlink bool
}

// owned lists the routes on the link that carry RouteProtocol.
func (h *hostGW) owned() ([]netlink.Route, error) {
	rs, err := netlink.RouteListFiltered(netlink.FAMILY_V4,
		&netlink.Route{LinkIndex: h.link.Attrs().Index, Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_OIF|netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
	if err != nil {
		return nil, fmt.Errorf("list routes on %s: %w", h.link.Attrs().Name, err)
	}
	return rs, nil
}

// sync adds or replaces the wanted routes and deletes the owned ones not wanted.
func (h *hostGW) sync(want []Route) error {
	have, err := h.owned()
	if err != nil {
		return err
	}
	wanted := map[string]Route{}
	for _, r := range want {
		wanted[r.Dst.String()] = r
	}
	var errs []error
	for _, r := range have {
		if r.Dst == nil {
			continue
		}
		w, ok := wanted[r.Dst.String()]
		if ok && r.Gw.Equal(net.IP(w.Via.AsSlice())) {
			delete(wanted, r.Dst.String())
			continue
		}
		if !ok {
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("delete route %s: %w", r.Dst, err))
			}
		}
	}
	for _, r := range want {
		if _, ok := wanted[r.Dst.String()]; !ok {
			continue
		}
		nr := &netlink.Route{LinkIndex: h.link.Attrs().Index, Dst: prefixNet(r.Dst), Gw: net.IP(r.Via.AsSlice()),
			Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
		if h.onlink {
			nr.Flags = int(netlink.FLAG_ONLINK)
		}
		if err := netlink.RouteReplace(nr); err != nil {
			errs = append(errs, fmt.Errorf("route %s: %w", r, err))
		}
	}
	return errors.Join(errs...)
}

// cleanup deletes every route the backend owns on the link.
func (h *hostGW) cleanup() error { return h.sync(nil) }

func prefixNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// DefaultRouteIP is the first IPv4 address of the interface this host's default route
// leaves by: the node IP a kubelet on another host reports when --node-ip is not given.
func DefaultRouteIP() (netip.Addr, error) {
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("list routes: %w", err)
	}
	for _, r := range routes {
		if r.LinkIndex == 0 {
			continue
		}
		if r.Dst != nil { // netlink gives the default route as nil or as 0.0.0.0/0
			if ones, _ := r.Dst.Mask.Size(); ones != 0 {
				continue
			}
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err != nil {
			continue
		}
		addrs, err := netlink.AddrList(link, netlink.FAMILY_V4)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && !ip.IsLoopback() {
				return ip, nil
			}
		}
	}
	return netip.Addr{}, errors.New("no default route with an IPv4 address on its interface (set --node-ip)")
}
