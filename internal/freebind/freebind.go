// Package freebind binds sockets to an address this host does not have yet (IP_FREEBIND):
// the pod bridge gets its gateway address only when the node's first pod is networked,
// and the servers that pods reach there (the cluster DNS, the API server under
// `wasmkube up`) start before that. Such a socket receives once the address exists.
package freebind

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// Control sets IP_FREEBIND on an IPv4 socket before it is bound; use it as the Control of
// a net.ListenConfig.
func Control(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1)
	})
	if err != nil {
		return err
	}
	return serr
}
