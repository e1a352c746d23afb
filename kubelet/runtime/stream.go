package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// TermSize is a terminal's size in characters.
type TermSize struct {
	Width, Height uint16
}

// Streams are the client's side of an exec or attach session. Nil streams are not
// connected; with TTY, the terminal's output goes to Stdout and Stderr is unused.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	TTY            bool
	Resize         <-chan TermSize // terminal size changes, with TTY
}

// Streamer is the part of a runtime that serves interactive sessions: `kubectl exec`
// and `kubectl attach`. The containerd runtime implements it; Fake does not.
type Streamer interface {
	// Exec runs cmd in running container id with streams connected and returns its exit
	// code once it has exited and its output is drained. Ending ctx kills the process.
	Exec(ctx context.Context, id string, cmd []string, s Streams) (int, error)
	// Attach connects streams to running container id's stdio until the container exits
	// or ctx ends. With stdinOnce, the end of the client's stdin closes the container's.
	Attach(ctx context.Context, id string, s Streams) error
}

// ioDrainTimeout bounds the wait for an exec'd process's output after it exited: a
// background child that inherited the pipes must not hold the session open forever
// (containerd's CRI plugin has the same limit, drain_exec_sync_io_timeout).
const ioDrainTimeout = 2 * time.Second

// Exec implements Streamer.
func (r *Containerd) Exec(ctx context.Context, id string, cmd []string, s Streams) (int, error) {
	if len(cmd) == 0 {
		return 0, fmt.Errorf("exec in container %s: empty command", id)
	}
	// Where an exec's time goes, at debug level (docs/benchmarks.md, kubectl exec round trip).
	t0 := time.Now()
	var tLoaded, tCreated, tStarted, tExited time.Time
	defer func() {
		if !tExited.IsZero() {
			r.log.Debug("exec", "container", id, "load", tLoaded.Sub(t0), "create", tCreated.Sub(tLoaded),
				"start", tStarted.Sub(tCreated), "run", tExited.Sub(tStarted), "drain", time.Since(tExited))
		}
	}()
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, wrapNotFound(err))
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: container is not running: %w", id, wrapNotFound(err))
	}
	// The spec LoadContainer already fetched: c.Spec would ask containerd for the
	// container again (one round trip of the few an exec costs, docs/benchmarks.md).
	info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	var spec oci.Spec
	if info.Spec == nil {
		return 0, fmt.Errorf("exec in container %s: the container has no OCI spec", id)
	}
	if err := json.Unmarshal(info.Spec.GetValue(), &spec); err != nil {
		return 0, fmt.Errorf("exec in container %s: its OCI spec: %w", id, err)
	}
	if spec.Process == nil {
		return 0, fmt.Errorf("exec in container %s: its OCI spec has no process", id)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = s.TTY
	bg := context.WithoutCancel(ctx)
	var proc client.Process
	var stdin io.Reader
	if s.Stdin != nil {
		// The client's end of stdin closes the process's (ctr does the same): the shim
		// keeps its own writer open until CloseIO.
		stdin = &eofReader{r: s.Stdin, onEOF: func() {
			if proc != nil {
				_ = proc.CloseIO(bg, client.WithStdinCloser)
			}
		}}
	}
	opts := []cio.Opt{cio.WithFIFODir(filepath.Join(r.opts.RootDir, "fifo"))}
	if s.TTY {
		opts = append(opts, cio.WithStreams(stdin, s.Stdout, nil), cio.WithTerminal)
	} else {
		opts = append(opts, cio.WithStreams(stdin, s.Stdout, s.Stderr))
	}
	// The reader above starts copying as soon as the fifos are open, before proc is set:
	// hold its EOF until Start returned.
	started := make(chan struct{})
	if er, ok := stdin.(*eofReader); ok {
		er.ready = started
	}
	tLoaded = time.Now()
	proc, err = task.Exec(ctx, "exec-"+newID()[:12], &pspec, cio.NewCreator(opts...))
	if err != nil {
		close(started)
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	// The exited process is deleted (a shim call, its fifos removed) after the exit code
	// went back to the client, not before: it is no part of the answer.
	defer func() { go func() { _, _ = proc.Delete(bg, client.WithProcessKill) }() }()
	exited, err := proc.Wait(bg)
	if err != nil {
		close(started)
		return 0, fmt.Errorf("exec in container %s: %w", id, err)
	}
	tCreated = time.Now()
	if err := proc.Start(ctx); err != nil {
		close(started)
		return 0, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	tStarted = time.Now()
	close(started)
	done := make(chan struct{})
	defer close(done)
	if s.TTY && s.Resize != nil {
		go resizeLoop(bg, proc, s.Resize, done)
	}
	var es client.ExitStatus
	select {
	case es = <-exited:
		tExited = time.Now()
	case <-ctx.Done():
		_ = proc.Kill(bg, syscall.SIGKILL)
		<-exited
		proc.IO().Cancel()
		return 0, ctx.Err()
	}
	drained := make(chan struct{})
	go func() { proc.IO().Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(ioDrainTimeout):
		proc.IO().Cancel()
	}
	if err := es.Error(); err != nil {
		return 0, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	return int(es.ExitCode()), nil
}

func resizeLoop(ctx context.Context, p interface {
	Resize(ctx context.Context, w, h uint32) error
}, sizes <-chan TermSize, done <-chan struct{}) {
	for {
		select {
		case sz, ok := <-sizes:
			if !ok {
				return
			}
			_ = p.Resize(ctx, uint32(sz.Width), uint32(sz.Height))
		case <-done:
			return
		}
	}
}

// eofReader calls onEOF once when r is exhausted (or fails), after ready is closed.
type eofReader struct {
	r     io.Reader
	onEOF func()
	ready <-chan struct{}
	once  sync.Once
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() {
			if e.ready != nil {
				<-e.ready
			}
			e.onEOF()
		})
	}
	return n, err
}

// containerIO is the kubelet's end of a running container's stdio, as containerd's CRI
// plugin keeps it: the output goes to the CRI log file and to every attached client, and
// attached clients' input goes to the container's stdin. The shim holds the fifos open on
// its side too, so a kubelet restart loses nothing: output waits in the pipe until
// recoverIO attaches again.
type containerIO struct {
	id        string
	tty       bool
	stdinOnce bool
	stdinW    *io.PipeWriter // nil: the container has no stdin
	log       *os.File
	lw        *LogWriter
	closeIO   func()      // closes the container's stdin (task CloseIO)
	cio       cio.IO      // the kubelet's ends of the fifos
	released  atomic.Bool // the runtime closed: the fifos stay for the next kubelet

	mu        sync.Mutex
	attached  map[*attachment]struct{}
	stdinDone bool          // stdinOnce and a client's stdin ended
	done      chan struct{} // closed when the output ended: the container exited
}

type attachment struct {
	stdout, stderr io.Writer
}

// fanout writes one output stream of a container to its log and its attached clients.
type fanout struct {
	io     *containerIO
	stderr bool
	log    io.WriteCloser
}

func (f *fanout) Write(p []byte) (int, error) {
	_, _ = f.log.Write(p)
	f.io.mu.Lock()
	targets := make([]*attachment, 0, len(f.io.attached))
	for a := range f.io.attached {
		targets = append(targets, a)
	}
	f.io.mu.Unlock()
	for _, a := range targets {
		w := a.stdout
		if f.stderr {
			w = a.stderr
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(p); err != nil {
			f.io.detach(a) // a client that went away does not stop the container
		}
	}
	return len(p), nil
}

func (c *containerIO) detach(a *attachment) {
	c.mu.Lock()
	delete(c.attached, a)
	c.mu.Unlock()
}

// newContainerIO opens the log at logPath for appending and returns the streams to give
// containerd (stdin nil unless withStdin).
func newContainerIO(id, logPath string, tty, withStdin, stdinOnce bool) (*containerIO, []cio.Opt, error) {
	c := &containerIO{id: id, tty: tty, stdinOnce: stdinOnce, attached: map[*attachment]struct{}{}, done: make(chan struct{})}
	var logDst io.Writer = io.Discard
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
		if err != nil {
			return nil, nil, fmt.Errorf("container %s: open log %s: %w", id, logPath, err)
		}
		c.log, logDst = f, f
	}
	c.lw = NewLogWriter(logDst)
	stdout := &fanout{io: c, log: c.lw.Stream(StreamStdout)}
	var stdin io.Reader
	if withStdin {
		pr, pw := io.Pipe()
		stdin, c.stdinW = pr, pw
	}
	opts := []cio.Opt{}
	if tty {
		opts = append(opts, cio.WithStreams(stdin, stdout, nil), cio.WithTerminal)
	} else {
		stderr := &fanout{io: c, stderr: true, log: c.lw.Stream(StreamStderr)}
		opts = append(opts, cio.WithStreams(stdin, stdout, stderr))
	}
	return c, opts, nil
}

// run waits for the container's output to end, then closes the log and releases
// attached clients.
func (c *containerIO) run(ioc cio.IO, outs ...io.Closer) {
	ioc.Wait()
	for _, o := range outs {
		_ = o.Close()
	}
	if c.log != nil {
		_ = c.log.Close()
	}
	if c.stdinW != nil {
		_ = c.stdinW.Close()
	}
	if !c.released.Load() {
		_ = ioc.Close() // the container exited: remove its fifos
	}
	close(c.done)
}

// attach connects s until the container's output ends or ctx ends.
func (c *containerIO) attach(ctx context.Context, s Streams) error {
	select {
	case <-c.done:
		return fmt.Errorf("container %s is not running", c.id)
	default:
	}
	a := &attachment{stdout: s.Stdout, stderr: s.Stderr}
	if c.tty {
		a.stderr = nil
	}
	c.mu.Lock()
	c.attached[a] = struct{}{}
	stdinDone := c.stdinDone
	c.mu.Unlock()
	defer c.detach(a)
	if s.Stdin != nil && c.stdinW != nil && !stdinDone {
		go func() {
			_, _ = io.Copy(c.stdinW, s.Stdin)
			if !c.stdinOnce {
				return // the next client may type on
			}
			c.mu.Lock()
			first := !c.stdinDone
			c.stdinDone = true
			c.mu.Unlock()
			if first {
				_ = c.stdinW.Close()
				if c.closeIO != nil {
					c.closeIO()
				}
			}
		}()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return nil
	}
}

// startIO is the cio.Creator for a container's task: the container's stdio ends in a
// containerIO registered under id.
func (r *Containerd) startIO(id, logPath string, tty, withStdin, stdinOnce bool) (cio.Creator, *containerIO, error) {
	c, opts, err := newContainerIO(id, logPath, tty, withStdin, stdinOnce)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, cio.WithFIFODir(filepath.Join(r.opts.RootDir, "fifo")))
	creator := cio.NewCreator(opts...)
	return func(tid string) (cio.IO, error) {
		ioc, err := creator(tid)
		if err != nil {
			c.close()
			return nil, err
		}
		r.registerIO(c, ioc)
		return ioc, nil
	}, c, nil
}

func (c *containerIO) close() {
	if c.log != nil {
		_ = c.log.Close()
	}
}

func (r *Containerd) registerIO(c *containerIO, ioc cio.IO) {
	c.cio = ioc
	r.iosMu.Lock()
	if r.ios == nil {
		r.ios = map[string]*containerIO{}
	}
	r.ios[c.id] = c
	r.iosMu.Unlock()
	go func() {
		c.run(ioc)
		r.iosMu.Lock()
		if r.ios[c.id] == c {
			delete(r.ios, c.id)
		}
		r.iosMu.Unlock()
	}()
}

// Attach implements Streamer.
func (r *Containerd) Attach(ctx context.Context, id string, s Streams) error {
	r.iosMu.Lock()
	c := r.ios[id]
	r.iosMu.Unlock()
	if c == nil {
		return fmt.Errorf("attach to container %s: it is not running, or was started without attachable stdio", id)
	}
	if s.TTY && s.Resize != nil {
		if ctr, err := r.c.LoadContainer(ctx, id); err == nil {
			if task, err := ctr.Task(ctx, nil); err == nil {
				done := make(chan struct{})
				defer close(done)
				go resizeLoop(context.WithoutCancel(ctx), task, s.Resize, done)
			}
		}
	}
	return c.attach(ctx, s)
}

// recoverIO attaches to the stdio of every running container again after a restart of
// the kubelet, so their output reaches the log and `kubectl attach` works.
func (r *Containerd) recoverIO(ctx context.Context) {
	ctrs, err := r.c.Containers(ctx, listFilter("container", ""))
	if err != nil {
		r.log.Warn("recover container stdio: list containers", "err", err)
		return
	}
	for _, ctr := range ctrs {
		id := ctr.ID()
		r.iosMu.Lock()
		have := r.ios[id] != nil
		r.iosMu.Unlock()
		if have {
			continue
		}
		info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		l := info.Labels
		var c *containerIO
		task, err := ctr.Task(ctx, func(fs *cio.FIFOSet) (cio.IO, error) {
			if fs == nil || strings.Contains(fs.Stdout, "://") || fs.Stdout == "" {
				return nil, errNoFIFOs // started with a log URI (an older kubelet) or no stdio
			}
			var opts []cio.Opt
			c, opts, err = newContainerIO(id, l[LabelLogPath], fs.Terminal, fs.Stdin != "", l[LabelStdinOnce] == "true")
			if err != nil {
				return nil, err
			}
			ioc, err := cio.NewAttach(opts...)(fs)
			if err != nil {
				c.close()
				return nil, err
			}
			r.registerIO(c, ioc)
			return ioc, nil
		})
		if err != nil {
			if !errdefs.IsNotFound(err) && !errors.Is(err, errNoFIFOs) {
				r.log.Warn("recover container stdio", "container", id, "err", err)
			}
			continue
		}
		if c != nil {
			c.closeIO = func() { _ = task.CloseIO(context.Background(), client.WithStdinCloser) }
		}
	}
}

var errNoFIFOs = errors.New("no fifos to attach to")

// releaseIO lets go of every container's fifos when the runtime closes (the kubelet
// stops): the shims keep the containers' ends open, so output waits in the pipes for the
// next kubelet's recoverIO instead of being read by a runtime nobody uses.
func (r *Containerd) releaseIO() {
	r.iosMu.Lock()
	ios := r.ios
	r.ios = nil
	r.iosMu.Unlock()
	for _, c := range ios {
		c.released.Store(true)
		c.cio.Cancel()
	}
}

// cgroupOpts mounts the container's cgroup at /sys/fs/cgroup as containerd's CRI plugin
// does: read-only unless privileged, and in a cgroup namespace of its own on a cgroup v2
// host (on v1, runc mounts the container's own hierarchies).
func cgroupOpts(privileged bool) []oci.SpecOpts {
	mode := "ro"
	if privileged {
		mode = "rw"
	}
	opts := []oci.SpecOpts{oci.WithMounts([]specs.Mount{{
		Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup",
		Options: []string{"nosuid", "noexec", "nodev", "relatime", mode},
	}})}
	if cgroupV2() && !privileged {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.CgroupNamespace}))
	}
	return opts
}

func cgroupV2() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}
