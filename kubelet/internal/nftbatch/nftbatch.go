// Package nftbatch holds what the node's nftables writers (the service proxy and the
// NetworkPolicy enforcer) need to rewrite a whole table in one netlink batch.
package nftbatch

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// batchBuffer is the netlink socket's send and receive buffer: a table rewrite is one
// message batch (one transaction), about 6 MB for 1000 Services x 10 endpoints, and
// sendmsg refuses a batch larger than the send buffer (the default is 208 KiB).
const batchBuffer = 64 << 20

// BigBuffers raises the socket's buffers past net.core.{w,r}mem_max (the *FORCE options;
// the kubelet runs as root). The memory is taken only while a batch is in flight. Pass
// it as nftables.WithSockOptions(nftbatch.BigBuffers).
func BigBuffers(c *netlink.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for _, opt := range []int{unix.SO_SNDBUFFORCE, unix.SO_RCVBUFFORCE} {
			if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, opt, batchBuffer); e != nil {
				serr = fmt.Errorf("netlink buffer: %w", e)
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
