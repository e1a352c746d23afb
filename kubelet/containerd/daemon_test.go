package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"golang.org/x/sys/unix"
)

func TestConfigPutsEverythingUnderDir(t *testing.T) {
	cfg := Config("/x/y")
	for _, want := range []string{`root = "/x/y/root"`, `state = "/x/y/state"`, `address = "/x/y/containerd.sock"`, `io.containerd.grpc.v1.cri`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
}

func TestStartAnswersAndStops(t *testing.T) {
	if os.Getuid() != 0 {
		t.Fatal("this test needs root to run containerd")
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Version(context.Background())
	c.Close()
	if err != nil || v.Version == "" {
		t.Fatalf("version: %v %+v", err, v)
	}
	if d.Snapshotter() != SnapshotterOverlay && d.Snapshotter() != SnapshotterNative {
		t.Fatalf("snapshotter %q", d.Snapshotter())
	}

	// Killed behind its back, the daemon comes back on the same socket.
	if err := syscall.Kill(d.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; d.Restarts() == 0; i++ {
		if i > 500 {
			t.Fatal("containerd was not restarted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := 0; ; i++ {
		c, err := client.New(d.Address())
		if err == nil {
			_, err = c.Version(context.Background())
			c.Close()
		}
		if err == nil {
			break
		}
		if i > 500 {
			t.Fatalf("restarted containerd does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	d.Stop()
	select {
	case <-d.Done():
	default:
		t.Fatal("daemon still running after Stop")
	}
}

// A daemon left running on the directory (its wasmkube was killed) is stopped, not fought.
func TestStartStopsALeftoverDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(Config(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	leftover := exec.Command("containerd", "--config", cfg)
	if err := leftover.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- leftover.Wait() }()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(dir, "containerd.sock")); err == nil {
			break
		}
		if i > 500 {
			leftover.Process.Kill()
			t.Fatal("leftover daemon never listened")
		}
		time.Sleep(20 * time.Millisecond)
	}
	d, err := Start(context.Background(), dir)
	if err != nil {
		leftover.Process.Kill()
		t.Fatal(err)
	}
	defer d.Stop()
	select {
	case <-waited:
	case <-time.After(15 * time.Second):
		leftover.Process.Kill()
		t.Fatal("leftover daemon still running")
	}
	if d.Pid() == leftover.Process.Pid {
		t.Fatal("Start adopted the leftover instead of starting its own")
	}
}

// mountsAt lists the file system types mounted exactly at dir, in mount order.
func mountsAt(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, line := range strings.Split(string(data), "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source ...
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) > 4 && len(g) > 0 && f[4] == dir {
			types = append(types, g[0])
		}
	}
	return types
}

func isTmpfs(t *testing.T, dir string) bool {
	t.Helper()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	return fs.Type == unix.TMPFS_MAGIC
}

// stateDirTest makes a daemon dir and cleans it up, also after a failure: shims and their
// containers killed, mounts on its state directory detached.
func stateDirTest(t *testing.T) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Fatal("this test needs root to run containerd")
	}
	dir, err := os.MkdirTemp("", "ctrd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range Shims(filepath.Join(dir, "containerd.sock")) {
			killChildren(pid) // the container a failed test left running
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for range mountsAt(t, filepath.Join(dir, "state")) {
			_ = unix.Unmount(filepath.Join(dir, "state"), unix.MNT_DETACH)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// killChildren kills the direct children of pid.
func killChildren(pid int) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so read after the last ')'.
		var state string
		var ppid, child int
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		if _, err := fmt.Sscanf(rest, " %s %d", &state, &ppid); err != nil || ppid != pid {
			continue
		}
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(st)), "%d", &child); err == nil {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	}
}

// Start puts the daemon's state (task bundles, shim sockets) on a tmpfs; Stop takes it away
// again when no container runs.
func TestStateDirIsATmpfsWhileRunning(t *testing.T) {
	dir := stateDirTest(t)
	d, err := Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	state := d.StateDir()
	if state != filepath.Join(dir, "state") {
		t.Errorf("StateDir() = %s, want %s", state, filepath.Join(dir, "state"))
	}
	if !isTmpfs(t, state) {
		t.Errorf("%s is not a tmpfs after Start", state)
	}
	if m := mountsAt(t, state); len(m) != 1 || m[0] != "tmpfs" {
		t.Errorf("mounts at %s after Start: %v, want one tmpfs", state, m)
	}
	d.Stop()
	if m := mountsAt(t, state); len(m) != 0 {
		t.Errorf("mounts at %s after Stop with no containers: %v, want none", state, m)
	}
}

// A tmpfs already on the state directory (left by a daemon whose wasmkube was killed) is
// used as it is, not covered by a second one; Stop unmounts it.
func TestStateDirReusesATmpfsThere(t *testing.T) {
	dir := stateDirTest(t)
	state := filepath.Join(dir, "state")
	if err := os.MkdirAll(state, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", state, "tmpfs", 0, "mode=0711"); err != nil {
		t.Fatal(err)
	}
	d, err := Start(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := mountsAt(t, state); len(m) != 1 || m[0] != "tmpfs" {
		t.Errorf("mounts at %s after Start on a tmpfs: %v, want that one tmpfs", state, m)
	}
	d.Stop()
	if m := mountsAt(t, state); len(m) != 0 {
		t.Errorf("mounts at %s after Stop: %v, want none", state, m)
	}
}

// With a container left running, Stop keeps the state tmpfs (its shim's bundle and socket
// live there); the next daemon on the directory uses that tmpfs instead of mounting another
// over it, and can still reach and remove the container; its Stop then unmounts it.
func TestStateDirStaysWhileShimsRun(t *testing.T) {
	dir := stateDirTest(t)
	busybox := "/bin/busybox" // busybox-static (scripts/deps.sh): the container's only file
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", busybox, filepath.Join(rootfs, "busybox")).CombinedOutput(); err != nil {
		t.Fatalf("copy busybox: %v: %s", err, out)
	}
	ctx := namespaces.WithNamespace(context.Background(), "test")
	// runc keeps container state outside the daemon's directory (/run/containerd/runc/NS),
	// so the id is unique to this run and its state is removed should the test fail.
	id := "sleeper-" + filepath.Base(dir)
	t.Cleanup(func() { os.RemoveAll(filepath.Join("/run/containerd/runc/test", id)) })

	d, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := c.NewContainer(ctx, id,
		client.WithRuntime("io.containerd.runc.v2", nil),
		client.WithNewSpec(oci.WithRootFSPath(rootfs), oci.WithProcessArgs("/busybox", "sleep", "600")))
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err == nil {
		err = task.Start(ctx)
	}
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(Shims(d.Address())) == 0 {
		t.Fatal("no shim found for the running container")
	}
	d.Stop()
	stopped = true
	state := d.StateDir()
	if m := mountsAt(t, state); len(m) != 1 || m[0] != "tmpfs" {
		t.Fatalf("mounts at %s after Stop with a container running: %v, want the tmpfs kept", state, m)
	}

	d2, err := Start(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped = false
	d = d2
	if m := mountsAt(t, state); len(m) != 1 || m[0] != "tmpfs" {
		t.Errorf("mounts at %s after the second Start: %v, want the one tmpfs reused", state, m)
	}
	c, err = client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctr, err = c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	task, err = ctr.Task(ctx, nil)
	if err != nil {
		t.Fatalf("the second daemon does not reach the running task: %v", err)
	}
	if _, err := task.Delete(ctx, client.WithProcessKill); err != nil {
		t.Fatal(err)
	}
	if err := ctr.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	d.Stop()
	stopped = true
	if m := mountsAt(t, state); len(m) != 0 {
		t.Errorf("mounts at %s after Stop once the container is gone: %v, want none", state, m)
	}
}
