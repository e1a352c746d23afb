// Package nodetest gives kubelet tests the real parts they run against: a private containerd
// in a temporary directory, the project's busybox and pause images, and a CNI config with a
// bridge and subnet of the test's own.
package nodetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"golang.org/x/sys/unix"

	"github.com/wasmkube/wasmkube/kubelet/cni"
	kcontainerd "github.com/wasmkube/wasmkube/kubelet/containerd"
	"github.com/wasmkube/wasmkube/kubelet/images"
)

// Containerd starts a private containerd for the test and stops it at cleanup.
func Containerd(t testing.TB) *kcontainerd.Daemon {
	t.Helper()
	return containerdIn(t, shortTempDir(t))
}

// ContainerdOnTmpfs is Containerd with its root (images, snapshots, metadata) on a tmpfs
// of its own, so what it measures does not depend on the machine's disk.
func ContainerdOnTmpfs(t testing.TB) *kcontainerd.Daemon {
	t.Helper()
	dir := shortTempDir(t)
	mountTmpfs(t, dir)
	return containerdIn(t, dir)
}

// TmpfsDir is a new directory with a tmpfs of its own, unmounted and removed at cleanup.
func TmpfsDir(t testing.TB) string {
	t.Helper()
	dir := shortTempDir(t)
	mountTmpfs(t, dir)
	t.Cleanup(func() {
		unmountUnder(dir)
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		os.RemoveAll(dir)
	})
	return dir
}

func mountTmpfs(t testing.TB, dir string) {
	t.Helper()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
}

// shortTempDir is a temporary directory with a short path: unix socket paths are limited to
// 108 bytes and t.TempDir is long.
func shortTempDir(t testing.TB) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("kubelet tests run containers and need root")
	}
	dir, err := os.MkdirTemp("", "wkc-")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func containerdIn(t testing.TB, dir string) *kcontainerd.Daemon {
	t.Helper()
	d, err := kcontainerd.Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop()
		killShims(d.Address())
		unmountUnder(dir)
		_ = unix.Unmount(dir, unix.MNT_DETACH) // its tmpfs, if it has one
		os.RemoveAll(dir)
	})
	return d
}

// killShims ends the runc shims of this test's daemon that a failed test left behind;
// shims outlive their daemon by design.
func killShims(address string) {
	for _, pid := range kcontainerd.Shims(address) {
		killTree(pid)
	}
}

// killTree kills pid's descendants (the containers a shim runs), then pid.
func killTree(pid int) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so split after the last ')'.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		var state string
		var child, ppid int
		fmt.Sscanf(filepath.Base(filepath.Dir(st)), "%d", &child)
		if _, err := fmt.Sscanf(rest, " %s %d", &state, &ppid); err == nil && ppid == pid && child > 0 {
			killTree(child)
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// unmountUnder lazily unmounts anything a failed test left mounted below dir, so RemoveAll
// does not descend into a container's root file system.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mps []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mps = append(mps, f[4])
		}
	}
	for i := len(mps) - 1; i >= 0; i-- {
		_ = unix.Unmount(mps[i], unix.MNT_DETACH)
	}
}

var (
	imgOnce sync.Once
	imgDir  string
	imgErr  error
)

// ImageArchives builds (once per test binary) the busybox and pause archives the way
// `make images` does, and returns their paths.
func ImageArchives(t testing.TB) (busybox, pause string) {
	t.Helper()
	imgOnce.Do(func() {
		removeStaleImageDirs()
		imgDir, imgErr = os.MkdirTemp("", "wki-")
		if imgErr != nil {
			return
		}
		imgErr = buildArchives(imgDir)
	})
	if imgErr != nil {
		t.Fatalf("build images: %v", imgErr)
	}
	return filepath.Join(imgDir, "busybox.tar"), filepath.Join(imgDir, "pause.tar")
}

// removeStaleImageDirs deletes archive dirs that earlier test binaries left (they cannot
// know when their last test ends); an hour old is surely finished.
func removeStaleImageDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "wki-*"))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > time.Hour {
			os.RemoveAll(d)
		}
	}
}

func buildArchives(dir string) error {
	_, file, _, _ := goruntime.Caller(0)
	pauseSrc := filepath.Join(filepath.Dir(file), "..", "..", "images", "pause")
	pauseBin := filepath.Join(dir, "pause.bin")
	cmd := exec.Command("go", "build", "-o", pauseBin, ".")
	cmd.Dir = pauseSrc
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build pause: %v: %s", err, out)
	}
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		return fmt.Errorf("busybox-static: %w", err)
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return err
	}
	pb, err := os.ReadFile(pauseBin)
	if err != nil {
		return err
	}
	write := func(name, ref string, es []images.Entry, ep, c []string) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		defer f.Close()
		return images.BuildArchive(f, ref, es, ep, c)
	}
	if err := write("busybox.tar", images.BusyboxRef, images.BusyboxEntries(bb, strings.Fields(string(list))), nil, []string{"sh"}); err != nil {
		return err
	}
	return write("pause.tar", images.PauseRef, images.PauseEntries(pb), []string{"/pause"}, nil)
}

// ImportImages imports busybox and pause into namespace ns of the daemon.
func ImportImages(t testing.TB, d *kcontainerd.Daemon, ns string) {
	t.Helper()
	bb, pause := ImageArchives(t)
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), ns)
	for _, a := range []string{bb, pause} {
		if _, err := images.ImportFile(ctx, c, a, d.Snapshotter()); err != nil {
			t.Fatal(err)
		}
	}
}

// Network returns a CNI config with a bridge and /24 of the test's own, under dir. The
// bridge is deleted at cleanup.
func Network(t testing.TB, dir string) cni.Config {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	name := "wkt" + hex.EncodeToString(b)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", name).Run() })
	return cni.Config{Bridge: name, PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 100+int(b[0])%100, b[1]), BinDir: cni.DefaultBinDir, Dir: dir}
}

// Veths lists host-side veth interfaces whose master is bridge.
func Veths(t testing.TB, bridge string) []string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "link", "show", "master", bridge).CombinedOutput()
	if err != nil {
		return nil // no bridge: no veths on it
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 {
			names = append(names, strings.SplitN(strings.TrimSuffix(f[1], ":"), "@", 2)[0])
		}
	}
	return names
}

// MountsUnder lists mount points below dir.
func MountsUnder(t testing.TB, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var mps []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mps = append(mps, f[4])
		}
	}
	return mps
}
