package overlay

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// VXLAN defaults, flannel's: VNI 1, the Linux port 8472, and a device MTU 50 bytes under
// its parent's (the outer IPv4, UDP and VXLAN headers). A network namespace holds one
// device per VNI and port: two clusters whose nodes share one (two `up --nodes` on a
// machine) need VNIs of their own.
const (
	DefaultVXLANDevice = "wasmkube.1"
	DefaultVXLANID     = 1
	VXLANPort          = 8472
	VXLANOverhead      = 50
)

// vxlanDev is this node's VXLAN device and what it keeps for each peer.
type vxlanDev struct {
	link   netlink.Link
	routes *hostGW
}

// VXLANInUseError: another device of this network namespace has the VNI on the port.
type VXLANInUseError struct {
	Device string
	VNI    int
}

func (e *VXLANInUseError) Error() string {
	return fmt.Sprintf("vxlan device %s: another device of this network namespace already has VNI %d on port %d (another cluster?): choose another --vxlan-id",
		e.Device, e.VNI, VXLANPort)
}

// ensureVXLAN makes (or takes over) the device name with VNI vni on port VXLANPort,
// bound to the node's interface and address, with the node's pod subnet's network address
// as its own (/32), and brings it up.
func ensureVXLAN(name string, vni int, parent netlink.Link, nodeIP netip.Addr, own netip.Prefix) (*vxlanDev, error) {
	if vni <= 0 {
		vni = DefaultVXLANID
	}
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: name, MTU: parent.Attrs().MTU - VXLANOverhead},
		VxlanId:   vni, VtepDevIndex: parent.Attrs().Index, SrcAddr: net.IP(nodeIP.AsSlice()),
		Port: VXLANPort, Learning: false,
	}
	if old, err := netlink.LinkByName(name); err == nil {
		v, ok := old.(*netlink.Vxlan)
		if !ok || v.VxlanId != want.VxlanId || v.VtepDevIndex != want.VtepDevIndex || !v.SrcAddr.Equal(want.SrcAddr) || v.Port != want.Port {
			// Another node IP or interface since the last start: made afresh.
			if err := netlink.LinkDel(old); err != nil {
				return nil, fmt.Errorf("vxlan device %s: replace: %w", name, err)
			}
		}
	}
	if err := netlink.LinkAdd(want); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("vxlan device %s: %w", name, err)
	}
	link, err := netlink.LinkByName(name)
	var nf netlink.LinkNotFoundError
	if errors.As(err, &nf) {
		// The add failed with EEXIST for another device's VNI.
		return nil, &VXLANInUseError{Device: name, VNI: vni}
	}
	if err != nil {
		return nil, fmt.Errorf("vxlan device %s: %w", name, err)
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.IP(own.Addr().AsSlice()), Mask: net.CIDRMask(32, 32)}}
	if err := netlink.AddrReplace(link, addr); err != nil {
		return nil, fmt.Errorf("vxlan device %s: address %s: %w", name, own.Addr(), err)
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("vxlan device %s: %w", name, err)
	}
	return &vxlanDev{link: link, routes: &hostGW{link: link, onlink: true}}, nil
}

// MAC is the device's address, which the node announces (AnnotationVTEPMAC).
func (d *vxlanDev) MAC() net.HardwareAddr { return d.link.Attrs().HardwareAddr }

// sync makes the device's routes, neighbour and forwarding entries those of peers.
func (d *vxlanDev) sync(peers []VXLANPeer) error {
	idx := d.link.Attrs().Index
	var errs []error
	// ARP: the peer's VTEP address is its MAC. FDB: that MAC is behind its node IP.
	wantNeigh := map[string]VXLANPeer{}
	wantFDB := map[string]VXLANPeer{}
	for _, p := range peers {
		wantNeigh[p.VTEP.String()] = p
		wantFDB[p.MAC.String()] = p
	}
	if ns, err := netlink.NeighList(idx, netlink.FAMILY_V4); err == nil {
		for _, n := range ns {
			p, ok := wantNeigh[n.IP.String()]
			if ok && bytes.Equal(n.HardwareAddr, p.MAC) {
				continue
			}
			if n.State&netlink.NUD_PERMANENT != 0 && !ok {
				_ = netlink.NeighDel(&n)
			}
		}
	}
	if fs, err := netlink.NeighList(idx, unix.AF_BRIDGE); err == nil {
		for _, f := range fs {
			p, ok := wantFDB[f.HardwareAddr.String()]
			if ok && f.IP.Equal(net.IP(p.NodeIP.AsSlice())) {
				continue
			}
			if !ok && f.State&netlink.NUD_PERMANENT != 0 && len(f.HardwareAddr) == 6 && !bytes.Equal(f.HardwareAddr, make([]byte, 6)) {
				_ = netlink.NeighDel(&f)
			}
		}
	}
	var routes []Route
	for _, p := range peers {
		// The forwarding entry first: the neighbour entry is of no use without it.
		fdb := &netlink.Neigh{LinkIndex: idx, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT, Flags: netlink.NTF_SELF,
			IP: net.IP(p.NodeIP.AsSlice()), HardwareAddr: p.MAC}
		if err := netlink.NeighSet(fdb); err != nil {
			errs = append(errs, fmt.Errorf("fdb %s -> %s: %w", p.MAC, p.NodeIP, err))
			continue
		}
		neigh := &netlink.Neigh{LinkIndex: idx, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
			IP: net.IP(p.VTEP.AsSlice()), HardwareAddr: p.MAC}
		if err := netlink.NeighSet(neigh); err != nil {
			errs = append(errs, fmt.Errorf("neighbour %s -> %s: %w", p.VTEP, p.MAC, err))
			continue
		}
		routes = append(routes, Route{Dst: p.PodCIDR, Via: p.VTEP})
	}
	if err := d.routes.sync(routes); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// remove deletes the device, and with it its routes and entries.
func (d *vxlanDev) remove() error {
	if err := netlink.LinkDel(d.link); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("vxlan device %s: %w", d.link.Attrs().Name, err)
	}
	return nil
}
