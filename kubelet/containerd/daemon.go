// Package containerd starts and supervises a private containerd daemon whose root, state and
// socket all live under one directory, so a kubelet (or a test) owns its runtime outright and
// leaves nothing behind in the host's /var/lib/containerd or /run/containerd.
package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	client "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
)

// Snapshotter names the daemon may use.
const (
	SnapshotterOverlay = "overlayfs"
	SnapshotterNative  = "native"
)

// ErrNotInstalled is returned by Start when the containerd binary cannot be found.
var ErrNotInstalled = errors.New("containerd binary not found in PATH (install it with `apt-get install containerd runc`)")

// Daemon is a containerd process started by Start and restarted when it dies.
type Daemon struct {
	dir         string
	address     string
	snapshotter string
	bin, cfg    string
	done        chan struct{} // closed once Stop has ended the daemon for good
	stopOnce    sync.Once

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the current process exits
	waitErr  error
	stopping bool
	restarts int
}

// Start launches containerd with root, state and socket under dir and returns once the daemon
// answers on its socket. The CRI plugin is disabled; containers run with the runc v2 shim. The
// daemon's log goes to dir/containerd.log. Cancelling ctx does not stop the daemon: call Stop.
func Start(ctx context.Context, dir string) (*Daemon, error) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, ErrNotInstalled
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("containerd dir %q: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("create containerd dir: %w", err)
	}
	d := &Daemon{
		dir:         dir,
		address:     filepath.Join(dir, "containerd.sock"),
		snapshotter: DetectSnapshotter(dir),
		done:        make(chan struct{}),
	}
	if len(d.address) >= 104 {
		return nil, fmt.Errorf("containerd socket path %q is too long for a unix socket (max 103 bytes): choose a shorter dir", d.address)
	}
	cfgPath := filepath.Join(dir, "config.toml")
	stopLeftover(cfgPath) // before its state is looked at
	if err := mountVolatile(filepath.Join(dir, "state")); err != nil {
		slog.Warn("containerd state stays on disk", "err", err)
	}
	if err := os.WriteFile(cfgPath, []byte(Config(dir)), 0o600); err != nil {
		d.releaseVolatile()
		return nil, fmt.Errorf("write containerd config: %w", err)
	}
	d.bin, d.cfg = bin, cfgPath
	if err := d.launch(); err != nil {
		d.releaseVolatile()
		return nil, err
	}
	go d.supervise()
	if err := d.waitReady(ctx); err != nil {
		d.Stop()
		return nil, err
	}
	return d, nil
}

// launch starts one containerd process.
func (d *Daemon) launch() error {
	stopLeftover(d.cfg)
	_ = os.Remove(d.address) // stale socket of a previous, killed daemon
	logf, err := os.OpenFile(filepath.Join(d.dir, "containerd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open containerd log: %w", err)
	}
	cmd := exec.Command(d.bin, "--config", d.cfg)
	cmd.Env = daemonEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C on the terminal reaches wasmkube, which stops its pods
		// first and the daemon last, instead of containerd dying under running containers.
		Setpgid: true,
		// If wasmkube itself dies, the daemon goes too (its shims and containers stay, and
		// the next start adopts them) instead of holding the socket and databases.
		Pdeathsig: syscall.SIGTERM,
	}
	started := make(chan error, 1)
	exited := make(chan struct{})
	go func() {
		// Pdeathsig fires when the thread that forked the daemon exits, so that thread is
		// held for the daemon's lifetime.
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		d.mu.Lock()
		d.cmd, d.exited = cmd, exited
		d.mu.Unlock()
		started <- nil
		err := cmd.Wait()
		logf.Close()
		d.mu.Lock()
		d.waitErr = err
		d.mu.Unlock()
		close(exited)
	}()
	if err := <-started; err != nil {
		logf.Close()
		return fmt.Errorf("start containerd: %w", err)
	}
	return nil
}

// daemonEnv is wasmkube's environment with GOMAXPROCS set to half the CPUs (at least 1)
// unless the user set it. The daemon's Go code seldom needs more, and fewer scheduler
// threads leave the cores to the runc and shim processes it starts: with 20 pods at once on
// 2 cores, GOMAXPROCS=1 cut the node's CPU per pod from 41-43 to 38 ms. containerd sets
// its shims' GOMAXPROCS itself.
func daemonEnv() []string {
	env := os.Environ()
	if os.Getenv("GOMAXPROCS") == "" {
		env = append(env, "GOMAXPROCS="+strconv.Itoa(max(1, goruntime.NumCPU()/2)))
	}
	return env
}

// stopLeftover stops a containerd still running with this config: one whose wasmkube was
// killed before Pdeathsig existed or while it could not act. Two daemons on one root would
// fight over its databases.
func stopLeftover(cfg string) {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(args) != 3 || filepath.Base(args[0]) != "containerd" || args[1] != "--config" || args[2] != cfg {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		slog.Warn("stopping a containerd left running on this directory", "pid", pid, "config", cfg)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 100; i++ {
			if syscall.Kill(pid, 0) != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// supervise restarts the daemon when it exits without Stop, backing off from 1 s to 30 s.
// Running containers survive (their shims do not depend on the daemon) and clients
// reconnect on their own.
func (d *Daemon) supervise() {
	backoff := time.Second
	for {
		d.mu.Lock()
		exited := d.exited
		d.mu.Unlock()
		<-exited
		d.mu.Lock()
		stopping, werr := d.stopping, d.waitErr
		d.mu.Unlock()
		if stopping {
			close(d.done)
			return
		}
		slog.Warn("containerd exited; restarting it", "err", werr, "in", backoff, "log", filepath.Join(d.dir, "containerd.log"))
		time.Sleep(backoff)
		d.mu.Lock()
		stopping = d.stopping
		d.mu.Unlock()
		if stopping {
			close(d.done)
			return
		}
		if err := d.launch(); err != nil {
			slog.Error("restart containerd", "err", err)
			backoff = min(2*backoff, 30*time.Second)
			// Try again after the back-off; a closed channel makes the loop retry at once.
			ch := make(chan struct{})
			close(ch)
			d.mu.Lock()
			d.exited = ch
			d.mu.Unlock()
			continue
		}
		d.mu.Lock()
		d.restarts++
		d.mu.Unlock()
		backoff = time.Second
	}
}

// Restarts is how many times the daemon was restarted after dying.
func (d *Daemon) Restarts() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.restarts
}

// Pid is the current daemon process id.
func (d *Daemon) Pid() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cmd.Process.Pid
}

func (d *Daemon) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	d.mu.Lock()
	exited := d.exited
	d.mu.Unlock()
	for {
		select {
		case <-exited:
			d.mu.Lock()
			werr := d.waitErr
			d.mu.Unlock()
			return fmt.Errorf("containerd exited during start-up (%v); see %s", werr, filepath.Join(d.dir, "containerd.log"))
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if _, err := os.Stat(d.address); err == nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			c, err := client.New(d.address, client.WithTimeout(2*time.Second))
			if err == nil {
				_, err = c.Version(cctx)
				c.Close()
			}
			cancel()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("containerd did not answer on %s within 30s; see %s", d.address, filepath.Join(d.dir, "containerd.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StateDir is the daemon's state directory (a tmpfs when mounting one was possible).
func (d *Daemon) StateDir() string { return filepath.Join(d.dir, "state") }

// Address is the daemon's gRPC socket path.
func (d *Daemon) Address() string { return d.address }

// Snapshotter is the snapshotter containers must use with this daemon: overlayfs when the
// kernel and the file system under dir support it, native otherwise.
func (d *Daemon) Snapshotter() string { return d.snapshotter }

// Done is closed when the daemon process exits.
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Stop sends SIGTERM, waits up to 10 s, then kills the daemon; it is not restarted.
// Running containers (their shims) survive a daemon stop by containerd's design; remove them
// before calling Stop.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.stopping = true
		cmd, exited := d.cmd, d.exited
		d.mu.Unlock()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		<-d.done
		d.releaseVolatile()
	})
	return nil
}

// mountVolatile puts a tmpfs on dir (containerd's state: task bundles, shim sockets and
// FIFOs) unless one is already there from a daemon whose containers still run. containerd
// keeps its state in /run/containerd, a memory file system, by default; on disk every task
// costs inode allocations, which on some file systems (ext4 without a journal) scan past
// every recently deleted inode and were the largest single cost of starting a container.
func mountVolatile(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	if isTmpfsMount(dir) {
		return nil
	}
	// State on disk from an older wasmkube may hold the bundles of tasks still running;
	// a tmpfs on top would hide them from the daemon that must adopt them.
	if bundles, _ := filepath.Glob(filepath.Join(dir, "io.containerd.runtime.v2.task", "*", "*")); len(bundles) > 0 {
		return fmt.Errorf("%s holds %d task bundles: keeping it on disk", dir, len(bundles))
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0711"); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// isTmpfsMount reports whether dir is the root of a tmpfs mount (not merely a directory on
// one: a data dir under /dev/shm).
func isTmpfsMount(dir string) bool {
	var fs unix.Statfs_t
	var st, parent unix.Stat_t
	if unix.Statfs(dir, &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		return false
	}
	if unix.Stat(dir, &st) != nil || unix.Stat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}

// releaseVolatile unmounts the state tmpfs once no shim of this daemon runs (their bundles
// live there); with pods left running it stays for the next daemon to use.
func (d *Daemon) releaseVolatile() {
	state := d.StateDir()
	if !isTmpfsMount(state) {
		return
	}
	for i := 0; i < 10 && len(Shims(d.address)) > 0; i++ {
		time.Sleep(100 * time.Millisecond) // shims exit shortly after their last task is deleted
	}
	if len(Shims(d.address)) > 0 {
		return
	}
	if err := unix.Unmount(state, unix.MNT_DETACH); err != nil {
		slog.Warn("unmount containerd state", "dir", state, "err", err)
	}
}

// Shims lists the pids of the runc shims serving the daemon at address (found by the socket
// path on their command line).
func Shims(address string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "containerd-shim") {
			continue
		}
		args := strings.Split(string(b), "\x00")
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && args[i+1] == address {
				if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
					pids = append(pids, pid)
				}
			}
		}
	}
	return pids
}

// Config renders the daemon configuration for a daemon rooted at dir. The format (version 2)
// is read by containerd 1.6 and 1.7 alike.
func Config(dir string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), filepath.Join(dir, "opt"))
}

// DetectSnapshotter reports overlayfs if an overlay mount succeeds on the file system that
// holds dir (overlay cannot sit on top of overlay or on some network file systems), native
// otherwise.
func DetectSnapshotter(dir string) string {
	probe, err := os.MkdirTemp(dir, "overlay-probe-")
	if err != nil {
		return SnapshotterNative
	}
	defer os.RemoveAll(probe)
	for _, sub := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(probe, sub), 0o700); err != nil {
			return SnapshotterNative
		}
	}
	merged := filepath.Join(probe, "merged")
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", filepath.Join(probe, "lower"), filepath.Join(probe, "upper"), filepath.Join(probe, "work"))
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return SnapshotterNative
	}
	_ = unix.Unmount(merged, 0)
	return SnapshotterOverlay
}
