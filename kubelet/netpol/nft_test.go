package netpol

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// lab is a node of the test's own: a network namespace holding a bridge, and two pod
// namespaces wired to it by veth pairs (10.65.0.2 and 10.65.0.3), all removed at cleanup.
// Bridged traffic between the pods passes the node's forward hook (br_netfilter, switched
// on inside the node's namespace only).
type lab struct {
	node, podA, podB string
	nodeFd           int
}

func run(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

func newLab(tb testing.TB) *lab {
	tb.Helper()
	if os.Getuid() != 0 {
		tb.Skip("network policy tests need root")
	}
	id := fmt.Sprintf("%d", os.Getpid()%100000)
	l := &lab{node: "wkh5-node-" + id, podA: "wkh5-a-" + id, podB: "wkh5-b-" + id}
	for _, ns := range []string{l.node, l.podA, l.podB} {
		run(tb, "ip", "netns", "add", ns)
		tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	}
	n := func(args ...string) { run(tb, append([]string{"ip", "netns", "exec", l.node}, args...)...) }
	n("ip", "link", "add", "wkh5br", "type", "bridge")
	n("ip", "link", "set", "wkh5br", "up")
	n("ip", "addr", "add", "10.65.0.1/24", "dev", "wkh5br")
	if out, err := exec.Command("ip", "netns", "exec", l.node, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1").CombinedOutput(); err != nil {
		tb.Skipf("br_netfilter in a namespace: %v: %s", err, out)
	}
	for i, pod := range []string{l.podA, l.podB} {
		host, peer := fmt.Sprintf("wkh5v%d", i), "eth0"
		n("ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", pod)
		n("ip", "link", "set", host, "master", "wkh5br", "up")
		p := func(args ...string) { run(tb, append([]string{"ip", "netns", "exec", pod}, args...)...) }
		p("ip", "addr", "add", fmt.Sprintf("10.65.0.%d/24", i+2), "dev", peer)
		p("ip", "link", "set", peer, "up")
		p("ip", "link", "set", "lo", "up")
	}
	fd, err := unix.Open(filepath.Join("/run/netns", l.node), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { unix.Close(fd) })
	l.nodeFd = fd
	return l
}

// inNetns runs f on a thread switched into the named namespace; sockets f opens stay
// there.
func inNetns(tb testing.TB, name string, f func()) {
	tb.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // the thread is discarded, not returned to the pool, when the goroutine ends locked
		h, err := netns.GetFromName(name)
		if err != nil {
			tb.Error(err)
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			tb.Error(err)
			return
		}
		f()
	}()
	<-done
}

// listen serves on port in pod namespace ns: every connection gets "ok" and is closed.
func (l *lab) listen(tb testing.TB, ns string, port int) {
	var ln net.Listener
	inNetns(tb, ns, func() {
		var err error
		if ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port)); err != nil {
			tb.Error(err)
		}
	})
	if ln == nil {
		tb.FailNow()
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("ok"))
			c.Close()
		}
	}()
}

// connects reports whether a TCP connection from pod namespace ns to addr gets the
// server's answer. A dropped SYN is seen as no answer within a second.
func (l *lab) connects(tb testing.TB, ns, addr string) bool {
	ok := false
	inNetns(tb, ns, func() {
		c, err := net.DialTimeout("tcp4", addr, time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		b := make([]byte, 2)
		if n, _ := c.Read(b); n == 2 && string(b) == "ok" {
			ok = true
		}
	})
	return ok
}

// TestTableEnforcesPolicies programs the table in a node namespace of the test's own and
// checks real connections between two pods on its bridge: open without policies; a
// default deny blocks; an allow rule opens exactly the port and peer it names; egress
// isolation of the client blocks what the server's ingress allows, until an egress rule
// allows it too; removing the table opens everything again.
func TestTableEnforcesPolicies(t *testing.T) {
	l := newLab(t)
	l.listen(t, l.podB, 56443)
	l.listen(t, l.podB, 56444)
	l.listen(t, l.podA, 56445)
	pods := []*v1.Pod{
		mkPod("default", "client", "10.65.0.2", map[string]string{"app": "client"}),
		mkPod("default", "web", "10.65.0.3", map[string]string{"app": "web"}),
	}
	tbl, err := newTable("wasmkube-netpol-test", nftables.WithNetNSFd(l.nodeFd))
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, nps []*networkingv1.NetworkPolicy, want map[string]bool) {
		t.Helper()
		if err := tbl.apply(Plan(nps, pods, nil)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for key, w := range want {
			from, to, _ := strings.Cut(key, "->")
			ns := map[string]string{"a": l.podA, "b": l.podB}[from]
			if got := l.connects(t, ns, to); got != w {
				t.Errorf("%s: %s connects %v, want %v", what, key, got, w)
			}
		}
	}
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	deny := policy("default", "deny", sel(), ingress, nil, nil)
	allow := policy("default", "web", sel("app", "web"), ingress, []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("app", "client")}}, Ports: []networkingv1.NetworkPolicyPort{tcp(56443)}}}, nil)

	step("no policy", nil, map[string]bool{"a->10.65.0.3:56443": true, "a->10.65.0.3:56444": true, "b->10.65.0.2:56445": true})
	step("default deny", []*networkingv1.NetworkPolicy{deny},
		map[string]bool{"a->10.65.0.3:56443": false, "a->10.65.0.3:56444": false, "b->10.65.0.2:56445": false})
	step("allow client to web:56443", []*networkingv1.NetworkPolicy{deny, allow},
		map[string]bool{"a->10.65.0.3:56443": true, "a->10.65.0.3:56444": false, "b->10.65.0.2:56445": false})

	egressDeny := policy("default", "client-out", sel("app", "client"), egress, nil, nil)
	step("client's egress denied", []*networkingv1.NetworkPolicy{allow, egressDeny},
		map[string]bool{"a->10.65.0.3:56443": false, "b->10.65.0.2:56445": true})
	egressAllow := policy("default", "client-out", sel("app", "client"), egress, nil, []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.65.0.0/16", Except: []string{"10.65.0.128/25"}}}},
		Ports: []networkingv1.NetworkPolicyPort{tcp(56443)}}})
	step("client's egress allowed to the block", []*networkingv1.NetworkPolicy{allow, egressAllow},
		map[string]bool{"a->10.65.0.3:56443": true, "a->10.65.0.3:56444": false, "b->10.65.0.2:56445": true})
	egressExcept := policy("default", "client-out", sel("app", "client"), egress, nil, []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.65.0.0/16", Except: []string{"10.65.0.0/30"}}}}}})
	step("the server's address excepted", []*networkingv1.NetworkPolicy{egressExcept},
		map[string]bool{"a->10.65.0.3:56443": false})

	if err := tbl.remove(); err != nil {
		t.Fatal(err)
	}
	if !l.connects(t, l.podA, "10.65.0.3:56444") {
		t.Error("table removed: still blocked")
	}
}
