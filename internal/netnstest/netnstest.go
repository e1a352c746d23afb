// Package netnstest gives tests network namespaces of their own, so that what they
// listen on, dial and program (addresses, routes, nftables) stays on this machine and
// out of the host's default namespace: make one (Add), join it to this namespace with a
// veth pair (Veth), run code inside it (Run). Namespaces are named, under /run/netns as
// `ip netns` makes them, and deleted at the end of the test. Needs root.
package netnstest

import (
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/vishvananda/netns"
)

// Sh runs a command (ip, sysctl ...), failing the test with its output when it fails.
func Sh(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		tb.Fatalf("%s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// Add makes the named network namespace with its loopback up; it is deleted when the
// test ends.
func Add(tb testing.TB, name string) {
	tb.Helper()
	Sh(tb, "ip", "netns", "add", name)
	tb.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	Sh(tb, "ip", "-n", name, "link", "set", "lo", "up")
}

// Veth joins namespace ns to this one with a veth pair: the end here is named link and
// holds hostAddr, the end in ns is eth0 and holds nsAddr (CIDR forms, "10.0.0.1/30"). The
// link is deleted when the test ends.
func Veth(tb testing.TB, link, ns, hostAddr, nsAddr string) {
	tb.Helper()
	Sh(tb, "ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns)
	tb.Cleanup(func() { _ = exec.Command("ip", "link", "del", link).Run() })
	Sh(tb, "ip", "addr", "add", hostAddr, "dev", link)
	Sh(tb, "ip", "link", "set", link, "up")
	Sh(tb, "ip", "-n", ns, "addr", "add", nsAddr, "dev", "eth0")
	Sh(tb, "ip", "-n", ns, "link", "set", "eth0", "up")
}

// Handle opens the named namespace (for libraries that take its file descriptor, such as
// nftables.WithNetNSFd); it is closed when the test ends.
func Handle(tb testing.TB, name string) netns.NsHandle {
	tb.Helper()
	h, err := netns.GetFromName(name)
	if err != nil {
		tb.Fatalf("network namespace %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = h.Close() })
	return h
}

// Run runs fn on an OS thread of its own moved into the named namespace, and waits for
// it; sockets fn makes there stay in that namespace. The thread is never handed back to
// the Go scheduler (it ends with its goroutine), so no other goroutine runs in ns.
func Run(tb testing.TB, name string, fn func()) {
	tb.Helper()
	h := Handle(tb, name)
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread ends with the goroutine
		if err := netns.Set(h); err != nil {
			done <- err
			return
		}
		fn()
		done <- nil
	}()
	if err := <-done; err != nil {
		tb.Fatalf("setns %s: %v", name, err)
	}
}
