package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	goruntime "runtime"
	"time"

	"golang.org/x/sys/unix"
)

// newNetNS creates a network namespace pinned by a bind mount at dir/<name>, so it outlives
// the pause process and CNI DEL can still run against it after a crash.
func newNetNS(dir, name string) (string, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return "", fmt.Errorf("network namespace %s: %w", path, err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		// The thread is left in the new namespace and never unlocked, so Go retires it when
		// this goroutine ends instead of reusing a thread in the wrong namespace.
		goruntime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		if err := unix.Mount(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), path, "none", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("bind mount: %w", err)
			return
		}
		errc <- nil
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return "", fmt.Errorf("network namespace %s: %w", path, err)
	}
	return path, nil
}

// removeNetNS unmounts and deletes a namespace made by newNetNS; a missing one is fine.
func removeNetNS(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount network namespace %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove network namespace %s: %w", path, err)
	}
	return nil
}

// DialInNetNS connects to addr from inside the network namespace at nsPath (a pod's), so
// that the pod's loopback is reachable. The socket is made on a thread switched into the
// namespace and keeps it; the thread goes back to the kubelet's namespace afterwards, or is
// retired if it cannot.
func DialInNetNS(ctx context.Context, nsPath, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			goruntime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open own network namespace: %w", err)}
			return
		}
		defer orig.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			goruntime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open network namespace %s: %w", nsPath, err)}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			goruntime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("enter network namespace %s: %w", nsPath, err)}
			return
		}
		c, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, addr)
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			goruntime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
