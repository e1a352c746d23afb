package overlay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	goruntime "runtime"
	"sort"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// inNetNS runs fn on a locked thread inside a network namespace of the test's own, with
// a bridge carrying 172.30.64.1/24 (the host network of these tests).
func inNetNS(t *testing.T, fn func(link netlink.Link)) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread, left in the test's namespace, is retired with the goroutine.
		goruntime.LockOSThread()
		ns, err := netns.New()
		if err != nil {
			t.Errorf("new netns: %v", err)
			return
		}
		defer ns.Close()
		d := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "wkh4d0"}}
		if err := netlink.LinkAdd(d); err != nil {
			t.Errorf("bridge: %v", err)
			return
		}
		_ = netlink.AddrAdd(d, &netlink.Addr{IPNet: &net.IPNet{IP: net.IPv4(172, 30, 64, 1), Mask: net.CIDRMask(24, 32)}})
		if err := netlink.LinkSetUp(d); err != nil {
			t.Errorf("bridge up: %v", err)
			return
		}
		fn(d)
	}()
	<-done
}

func routeStrings(t *testing.T, link netlink.Link, proto netlink.RouteProtocol) []string {
	rs, err := netlink.RouteList(link, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Protocol == proto && r.Dst != nil {
			out = append(out, fmt.Sprintf("%s via %s", r.Dst, r.Gw))
		}
	}
	return out
}

// TestHostGWSync: the kernel's routes follow the plan (added, changed, removed), routes
// the backend did not make are left alone, and cleanup removes all of its own.
func TestHostGWSync(t *testing.T) {
	inNetNS(t, func(link netlink.Link) {
		ip, onLink, err := NodeLink(netip.MustParseAddr("172.30.64.1"))
		if err != nil || onLink.String() != "172.30.64.0/24" || ip.Attrs().Name != "wkh4d0" {
			t.Errorf("NodeLink = %v %s %v", ip, onLink, err)
			return
		}
		if _, _, err := NodeLink(netip.MustParseAddr("172.30.64.9")); err == nil {
			t.Errorf("NodeLink of an address no interface has: want an error")
		}
		// Someone else's route on the same link.
		foreign := &netlink.Route{LinkIndex: link.Attrs().Index, Dst: &net.IPNet{IP: net.IPv4(10, 99, 0, 0), Mask: net.CIDRMask(24, 32)},
			Gw: net.IPv4(172, 30, 64, 9)}
		if err := netlink.RouteAdd(foreign); err != nil {
			t.Errorf("foreign route: %v", err)
			return
		}
		gw := &hostGW{link: link}
		r := func(dst, via string) Route {
			return Route{Dst: netip.MustParsePrefix(dst), Via: netip.MustParseAddr(via)}
		}
		steps := []struct {
			want []Route
			kern string
		}{
			{[]Route{r("10.64.1.0/24", "172.30.64.2"), r("10.64.2.0/24", "172.30.64.3")}, "[10.64.1.0/24 via 172.30.64.2 10.64.2.0/24 via 172.30.64.3]"},
			{[]Route{r("10.64.1.0/24", "172.30.64.4"), r("10.64.2.0/24", "172.30.64.3")}, "[10.64.1.0/24 via 172.30.64.4 10.64.2.0/24 via 172.30.64.3]"},
			{[]Route{r("10.64.2.0/24", "172.30.64.3")}, "[10.64.2.0/24 via 172.30.64.3]"},
			{nil, "[]"},
		}
		for i, s := range steps {
			if err := gw.sync(s.want); err != nil {
				t.Errorf("step %d: sync: %v", i, err)
				return
			}
			if got := fmt.Sprint(routeStrings(t, link, RouteProtocol)); got != s.kern && !(s.kern == "[]" && got == "[]") {
				t.Errorf("step %d: kernel has %s, want %s", i, got, s.kern)
			}
		}
		if err := gw.sync([]Route{r("10.64.3.0/24", "172.30.64.5")}); err != nil {
			t.Errorf("sync: %v", err)
		}
		if err := gw.cleanup(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if got := routeStrings(t, link, RouteProtocol); len(got) != 0 {
			t.Errorf("after cleanup the kernel still has %v", got)
		}
		rs, _ := netlink.RouteList(link, netlink.FAMILY_V4)
		kept := false
		for _, r := range rs {
			kept = kept || (r.Dst != nil && r.Dst.String() == "10.99.0.0/24")
		}
		if !kept {
			t.Errorf("the route the backend did not make is gone: %v", rs)
		}
	})
}

// TestVXLANSync: the device is made with its address, and its routes, neighbour and
// forwarding entries follow the peers; remove deletes it.
func TestVXLANSync(t *testing.T) {
	inNetNS(t, func(link netlink.Link) {
		dev, err := ensureVXLAN("wkh4vx.1", 1, link, netip.MustParseAddr("172.30.64.1"), netip.MustParsePrefix("10.64.0.0/24"))
		if err != nil {
			t.Errorf("ensureVXLAN: %v", err)
			return
		}
		// A second start takes the device over (same MAC, which the node announced).
		again, err := ensureVXLAN("wkh4vx.1", 1, link, netip.MustParseAddr("172.30.64.1"), netip.MustParsePrefix("10.64.0.0/24"))
		if err != nil || again.MAC().String() != dev.MAC().String() {
			t.Errorf("ensureVXLAN again: %v, MAC %s then %s", err, dev.MAC(), again.MAC())
			return
		}
		// A second device with the same VNI and port in one namespace is refused, by name.
		_, err = ensureVXLAN("wkh4vx.2", 1, link, netip.MustParseAddr("172.30.64.1"), netip.MustParsePrefix("10.65.0.0/24"))
		var inUse *VXLANInUseError
		if !errors.As(err, &inUse) || inUse.VNI != 1 || inUse.Device != "wkh4vx.2" {
			t.Errorf("a second device of VNI 1: %v, want a VXLANInUseError", err)
		}
		peer := func(cidr, mac, ip string) VXLANPeer {
			p := netip.MustParsePrefix(cidr)
			m, _ := net.ParseMAC(mac)
			return VXLANPeer{PodCIDR: p, VTEP: p.Addr(), MAC: m, NodeIP: netip.MustParseAddr(ip)}
		}
		state := func() string {
			idx := dev.link.Attrs().Index
			var out []string
			for _, r := range routeStrings(t, dev.link, RouteProtocol) {
				out = append(out, "route "+r)
			}
			ns, _ := netlink.NeighList(idx, netlink.FAMILY_V4)
			for _, n := range ns {
				if n.State&netlink.NUD_PERMANENT != 0 {
					out = append(out, fmt.Sprintf("neigh %s %s", n.IP, n.HardwareAddr))
				}
			}
			fs, _ := netlink.NeighList(idx, unix.AF_BRIDGE)
			for _, f := range fs {
				if f.IP != nil {
					out = append(out, fmt.Sprintf("fdb %s %s", f.HardwareAddr, f.IP))
				}
			}
			sort.Strings(out)
			return fmt.Sprint(out)
		}
		steps := []struct {
			peers []VXLANPeer
			want  string
		}{
			{[]VXLANPeer{peer("10.64.1.0/24", "02:00:00:00:00:02", "172.30.64.2")},
				"[fdb 02:00:00:00:00:02 172.30.64.2 neigh 10.64.1.0 02:00:00:00:00:02 route 10.64.1.0/24 via 10.64.1.0]"},
			{[]VXLANPeer{peer("10.64.1.0/24", "02:00:00:00:00:02", "172.30.64.2"), peer("10.64.2.0/24", "02:00:00:00:00:03", "172.30.64.3")},
				"[fdb 02:00:00:00:00:02 172.30.64.2 fdb 02:00:00:00:00:03 172.30.64.3 neigh 10.64.1.0 02:00:00:00:00:02 neigh 10.64.2.0 02:00:00:00:00:03 route 10.64.1.0/24 via 10.64.1.0 route 10.64.2.0/24 via 10.64.2.0]"},
			{[]VXLANPeer{peer("10.64.2.0/24", "02:00:00:00:00:03", "172.30.64.3")},
				"[fdb 02:00:00:00:00:03 172.30.64.3 neigh 10.64.2.0 02:00:00:00:00:03 route 10.64.2.0/24 via 10.64.2.0]"},
			{nil, "[]"},
		}
		for i, s := range steps {
			if err := dev.sync(s.peers); err != nil {
				t.Errorf("step %d: sync: %v", i, err)
				return
			}
			if got := state(); got != s.want {
				t.Errorf("step %d: kernel has %s\nwant %s", i, got, s.want)
			}
		}
		if err := dev.remove(); err != nil {
			t.Errorf("remove: %v", err)
		}
		if _, err := netlink.LinkByName("wkh4vx.1"); err == nil {
			t.Errorf("device still there after remove")
		}
	})
}

// TestMasquerade: the table holds the one rule (pod subnet, not to the cluster CIDR,
// masquerade), rewriting it keeps one, and removing it twice is fine.
func TestMasquerade(t *testing.T) {
	inNetNS(t, func(netlink.Link) {
		pod, cluster := netip.MustParsePrefix("10.64.1.0/24"), netip.MustParsePrefix("10.64.0.0/16")
		for i := 0; i < 2; i++ {
			if err := EnsureMasquerade("wkh4-masq", pod, cluster); err != nil {
				t.Errorf("EnsureMasquerade: %v", err)
				return
			}
		}
		conn, err := nftables.New()
		if err != nil {
			t.Error(err)
			return
		}
		tbl := &nftables.Table{Name: "wkh4-masq", Family: nftables.TableFamilyIPv4}
		rules, err := conn.GetRules(tbl, &nftables.Chain{Name: "postrouting", Table: tbl})
		if err != nil || len(rules) != 1 {
			t.Errorf("rules %v, err %v: want one", rules, err)
			return
		}
		var cmps []string
		masq := false
		for _, e := range rules[0].Exprs {
			switch x := e.(type) {
			case *expr.Cmp:
				a, _ := netip.AddrFromSlice(x.Data)
				cmps = append(cmps, fmt.Sprintf("%d %s", x.Op, a))
			case *expr.Masq:
				masq = true
			}
		}
		if fmt.Sprint(cmps) != fmt.Sprintf("[%d 10.64.1.0 %d 10.64.0.0]", expr.CmpOpEq, expr.CmpOpNeq) || !masq {
			t.Errorf("rule compares %v, masquerade %v", cmps, masq)
		}
		for i := 0; i < 2; i++ {
			if err := RemoveMasquerade("wkh4-masq"); err != nil {
				t.Errorf("RemoveMasquerade: %v", err)
			}
		}
	})
}
