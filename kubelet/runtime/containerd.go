package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apievents "github.com/containerd/containerd/api/events"
	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"
	"github.com/distribution/reference"
	"github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
)

// Label keys the kubelet stores on containerd containers. They are the source of truth a
// restarted kubelet adopts its pods from.
const (
	LabelKind         = "io.wasmkube.kind" // "sandbox" or "container"
	LabelPodUID       = "io.wasmkube.pod.uid"
	LabelPodName      = "io.wasmkube.pod.name"
	LabelPodNamespace = "io.wasmkube.pod.namespace"
	LabelSandboxID    = "io.wasmkube.sandbox.id"
	LabelName         = "io.wasmkube.container.name"
	LabelAttempt      = "io.wasmkube.container.attempt"
	LabelLogPath      = "io.wasmkube.container.log"
	LabelImageRef     = "io.wasmkube.container.imageref"
	LabelStartedAt    = "io.wasmkube.container.started"
	LabelOOM          = "io.wasmkube.container.oom"
	LabelNetNS        = "io.wasmkube.sandbox.netns"
	LabelIP           = "io.wasmkube.sandbox.ip"
	LabelHostNetwork  = "io.wasmkube.sandbox.hostnetwork"
	LabelClaimedAt    = "io.wasmkube.sandbox.claimed"     // when a warm sandbox became the pod's: its CreatedAt
	LabelStdin        = "io.wasmkube.container.stdin"     // "true": the container has a stdin to attach to
	LabelStdinOnce    = "io.wasmkube.container.stdinonce" // "true": the first attach's EOF closes it
	LabelTTY          = "io.wasmkube.container.tty"
	// The runc v2 shim serves every container whose OCI spec carries the same group
	// annotation from one process: one shim per pod instead of one per container.
	labelShimGroup = "io.containerd.runc.v2.group"
)

const runcV2 = "io.containerd.runc.v2"

// Network wires a sandbox's network namespace; the kubelet's CNI package implements it.
type Network interface {
	// Setup attaches the namespace at netnsPath and returns the pod's IP.
	Setup(ctx context.Context, sandboxID, netnsPath string, pod PodRef) (string, error)
	// Teardown detaches it and releases the IP. netnsPath may no longer exist.
	Teardown(ctx context.Context, sandboxID, netnsPath string, pod PodRef) error
}

// ContainerdOptions configure NewContainerd.
type ContainerdOptions struct {
	Address     string // containerd socket
	Namespace   string // containerd namespace: one per node
	Snapshotter string // "overlayfs" or "native"
	RootDir     string // sandbox files, network namespaces, exec FIFOs
	Network     Network
	Logger      *slog.Logger
	OCIRuntime  OCIRuntime // the shim's runtime binary for new containers (ResolveOCIRuntime); zero: runc
}

// Containerd is the Runtime on a containerd daemon (>= 1.6).
type Containerd struct {
	c    *client.Client
	opts ContainerdOptions
	log  *slog.Logger

	changed chan string
	cancel  context.CancelFunc
	pool    warmPool
	images  imageCache

	iosMu sync.Mutex
	ios   map[string]*containerIO // running containers' stdio, by container id

	cgroups cgroupPaths // container id -> cgroup path, for ContainerStats (stats.go)
}

// NewContainerd connects to containerd. It watches task exit and OOM events until ctx ends.
func NewContainerd(ctx context.Context, opts ContainerdOptions) (*Containerd, error) {
	if opts.Namespace == "" || opts.RootDir == "" || opts.Network == nil {
		return nil, fmt.Errorf("containerd runtime: Namespace, RootDir and Network are required")
	}
	if opts.Snapshotter == "" {
		opts.Snapshotter = "overlayfs"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c, err := client.New(opts.Address, client.WithDefaultNamespace(opts.Namespace), client.WithTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("connect to containerd at %s: %w", opts.Address, err)
	}
	for _, d := range []string{"sandboxes", "netns", "fifo"} {
		if err := os.MkdirAll(filepath.Join(opts.RootDir, d), 0o711); err != nil {
			c.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &Containerd{c: c, opts: opts, log: opts.Logger, changed: make(chan string, 256), cancel: cancel}
	r.pool.kick = make(chan struct{}, 1)
	go r.watchEvents(ctx)
	go r.recoverIO(ctx)
	return r, nil
}

// Client is the underlying containerd client.
func (r *Containerd) Client() *client.Client { return r.c }

// Changed delivers the id of a container whose task exited (or was OOM-killed), so the
// kubelet can react without waiting for its next relist. Sends never block: events are
// dropped when nobody reads, the relist catches up.
func (r *Containerd) Changed() <-chan string { return r.changed }

// Close stops watching events and releases the client.
func (r *Containerd) Close() error {
	r.cancel()
	r.releaseIO()
	return r.c.Close()
}

func (r *Containerd) watchEvents(ctx context.Context) {
	for ctx.Err() == nil {
		ch, errs := r.c.EventService().Subscribe(ctx, `topic=="/tasks/oom"`, `topic=="/tasks/exit"`)
	loop:
		for {
			select {
			case <-ctx.Done():
				return
			case err := <-errs:
				if err != nil && ctx.Err() == nil {
					r.log.Warn("containerd event stream broke; resubscribing", "err", err)
				}
				break loop
			case env := <-ch:
				if env == nil || env.Namespace != r.opts.Namespace || env.Event == nil {
					continue
				}
				var id string
				switch env.Topic {
				case "/tasks/oom":
					var e apievents.TaskOOM
					if proto.Unmarshal(env.Event.GetValue(), &e) == nil {
						id = e.ContainerID
						r.markOOM(ctx, id)
					}
				case "/tasks/exit":
					var e apievents.TaskExit
					if proto.Unmarshal(env.Event.GetValue(), &e) == nil && e.ID == e.ContainerID {
						id = e.ContainerID
					}
				}
				if id != "" {
					select {
					case r.changed <- id:
					default:
					}
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (r *Containerd) markOOM(ctx context.Context, id string) {
	if _, err := r.setLabels(ctx, id, map[string]string{LabelOOM: "true"}); err != nil && !errdefs.IsNotFound(err) {
		r.log.Warn("record OOM kill", "container", id, "err", err)
	}
}

// Version implements Runtime.
func (r *Containerd) Version(ctx context.Context) (string, error) {
	v, err := r.c.Version(ctx)
	if err != nil {
		return "", fmt.Errorf("containerd version: %w", err)
	}
	return "containerd://" + strings.TrimPrefix(v.Version, "v"), nil
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NormalizeImage turns a Kubernetes image name into containerd's fully qualified form
// ("busybox" -> "docker.io/library/busybox:latest").
func NormalizeImage(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", ref, err)
	}
	return named.String(), nil
}

func (r *Containerd) sandboxDir(id string) string {
	return filepath.Join(r.opts.RootDir, "sandboxes", id)
}

// HostsFile renders /etc/hosts for a pod: loopback, then the pod's address with its
// hostname, preceded by hostname.domain when domain is set (a pod with a subdomain, such as
// a StatefulSet's: "10.42.0.5\tweb-0.nginx.default.svc.cluster.local\tweb-0", as
// upstream's kubelet writes it).
func HostsFile(ip, hostname, domain string) []byte {
	var b bytes.Buffer
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	switch {
	case ip == "":
	case domain != "":
		fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
	default:
		fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
	}
	return b.Bytes()
}

// RunPodSandbox implements Runtime. A pod on the pod network takes a warm sandbox when the
// pool has one (warmpool.go); otherwise it gets a new one: network namespace, CNI ADD, then
// the pause container joining that namespace with new IPC and UTS namespaces of its own.
func (r *Containerd) RunPodSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	defer r.pool.busy()()
	if sb, err := r.claimWarm(ctx, cfg); sb != nil || err != nil {
		return sb, err
	}
	return r.newSandbox(ctx, cfg, "sandbox")
}

// newSandbox creates and starts a sandbox labelled with kind: "sandbox" for a pod, or
// kindWarm for the pool (cfg.Pod is then empty).
func (r *Containerd) newSandbox(ctx context.Context, cfg SandboxConfig, kind string) (_ *Sandbox, retErr error) {
	id := newID()
	var cleanups []func()
	defer func() {
		if retErr != nil {
			for i := len(cleanups) - 1; i >= 0; i-- {
				cleanups[i]()
			}
		}
	}()
	// Clean-ups must run even when ctx is what failed.
	bg := context.WithoutCancel(ctx)

	dir := r.sandboxDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", id, err)
	}
	cleanups = append(cleanups, func() { os.RemoveAll(dir) })

	var nsPath, ip string
	nsOpts := []oci.SpecOpts{oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace)}
	hostname, domain := cfg.Hostname, cfg.HostDomain
	if hostname == "" {
		hostname = cfg.Pod.Name
	}
	if cfg.HostNetwork {
		ip = cfg.HostIP
		hostname, _ = os.Hostname()
		domain = ""
	} else {
		var err error
		if nsPath, err = newNetNS(filepath.Join(r.opts.RootDir, "netns"), id); err != nil {
			return nil, fmt.Errorf("sandbox %s: %w", id, err)
		}
		cleanups = append(cleanups, func() { _ = removeNetNS(nsPath) })
		tNet := time.Now()
		ip, err = r.opts.Network.Setup(ctx, id, nsPath, cfg.Pod)
		r.log.Debug("sandbox network", "pod", cfg.Pod.Name, "took", time.Since(tNet))
		if err != nil {
			return nil, &NetworkError{Sandbox: id, Op: NetworkSetup, Err: err}
		}
		cleanups = append(cleanups, func() { _ = r.opts.Network.Teardown(bg, id, nsPath, cfg.Pod) })
		nsOpts = []oci.SpecOpts{oci.WithHostname(hostname), oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: nsPath})}
	}
	if err := r.writePodFiles(id, ip, hostname, domain, cfg.ResolvConf); err != nil {
		return nil, err
	}

	img, err := r.c.GetImage(ctx, cfg.Image)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: pause image %s: %w", id, cfg.Image, wrapNotFound(err))
	}
	iinfo, err := r.images.get(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: pause image %s: %w", id, cfg.Image, err)
	}
	labels := podLabels(cfg.Pod)
	labels[LabelKind] = kind
	labels[LabelNetNS] = nsPath
	labels[LabelIP] = ip
	if cfg.HostNetwork {
		labels[LabelHostNetwork] = "true"
	}
	labels[labelShimGroup] = id
	ctr, err := r.c.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.opts.Snapshotter),
		withSnapshot(id, img, iinfo),
		client.WithRuntime(runcV2, r.opts.OCIRuntime.shimOptions()),
		client.WithContainerLabels(labels),
		client.WithNewSpec(append([]oci.SpecOpts{
			r.images.withImageConfig(img, iinfo),
			oci.WithAnnotations(map[string]string{labelShimGroup: id}),
			oci.WithMounts(r.podFileMounts(id)),
		}, append(nsOpts, r.opts.OCIRuntime.specOpt())...)...),
	)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: create pause container: %w", id, err)
	}
	cleanups = append(cleanups, func() { _ = ctr.Delete(bg, client.WithSnapshotCleanup) })
	tTask := time.Now()
	task, err := ctr.NewTask(ctx, cio.NullIO)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: create pause task: %w", id, err)
	}
	r.log.Debug("sandbox task", "pod", cfg.Pod.Name, "took", time.Since(tTask))
	cleanups = append(cleanups, func() { _, _ = task.Delete(bg, client.WithProcessKill) })
	if err := task.Start(ctx); err != nil {
		return nil, fmt.Errorf("sandbox %s: start pause: %w", id, err)
	}
	info, _ := ctr.Info(ctx)
	return &Sandbox{ID: id, Pod: cfg.Pod, State: SandboxReady, IP: ip, NetNSPath: nsPath, Pid: task.Pid(), CreatedAt: info.CreatedAt}, nil
}

// writePodFiles writes the /etc/hosts, /etc/hostname and /etc/resolv.conf that every
// container of the sandbox bind-mounts. Rewriting them keeps their inodes, so containers
// already running see the new content.
func (r *Containerd) writePodFiles(id, ip, hostname, domain string, resolv []byte) error {
	if resolv == nil {
		resolv, _ = os.ReadFile("/etc/resolv.conf")
	}
	dir := r.sandboxDir(id)
	for name, data := range map[string][]byte{"hosts": HostsFile(ip, hostname, domain), "hostname": []byte(hostname + "\n"), "resolv.conf": resolv} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("sandbox %s: %w", id, err)
		}
	}
	return nil
}

func (r *Containerd) podFileMounts(sandboxID string) []specs.Mount {
	dir := r.sandboxDir(sandboxID)
	var ms []specs.Mount
	for _, f := range []string{"hosts", "hostname", "resolv.conf"} {
		ms = append(ms, specs.Mount{Type: "bind", Source: filepath.Join(dir, f), Destination: "/etc/" + f, Options: []string{"rbind", "rw"}})
	}
	return ms
}

func podLabels(p PodRef) map[string]string {
	return map[string]string{LabelPodUID: p.UID, LabelPodName: p.Name, LabelPodNamespace: p.Namespace}
}

func podFromLabels(l map[string]string) PodRef {
	return PodRef{UID: l[LabelPodUID], Name: l[LabelPodName], Namespace: l[LabelPodNamespace]}
}

func wrapNotFound(err error) error {
	if errdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	return err
}

func (r *Containerd) containersOf(ctx context.Context, sandboxID string) ([]client.Container, error) {
	return r.c.Containers(ctx, fmt.Sprintf(`labels."%s"==%s`, LabelSandboxID, sandboxID))
}

// StopPodSandbox implements Runtime.
func (r *Containerd) StopPodSandbox(ctx context.Context, id string) error {
	ctrs, err := r.containersOf(ctx, id)
	if err != nil {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	for _, c := range ctrs {
		if err := r.StopContainer(ctx, c.ID(), 0); err != nil {
			return fmt.Errorf("stop sandbox %s: %w", id, err)
		}
	}
	sb, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if err := r.killTask(ctx, sb, 0); err != nil {
		return fmt.Errorf("stop sandbox %s: pause: %w", id, err)
	}
	labels, err := sb.Labels(ctx)
	if err != nil {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	return r.teardownNetwork(ctx, id, labels)
}

func (r *Containerd) teardownNetwork(ctx context.Context, id string, labels map[string]string) error {
	path := labels[LabelNetNS]
	if path == "" {
		return nil
	}
	if err := r.opts.Network.Teardown(ctx, id, path, podFromLabels(labels)); err != nil {
		return &NetworkError{Sandbox: id, Op: NetworkTeardown, Err: err}
	}
	if err := removeNetNS(path); err != nil {
		return &NetworkError{Sandbox: id, Op: NetworkTeardown, Err: err}
	}
	return nil
}

// RemovePodSandbox implements Runtime. It stops what still runs first.
func (r *Containerd) RemovePodSandbox(ctx context.Context, id string) error {
	if err := r.StopPodSandbox(ctx, id); err != nil {
		return err
	}
	ctrs, err := r.containersOf(ctx, id)
	if err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	for _, c := range ctrs {
		if err := r.RemoveContainer(ctx, c.ID()); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
	}
	if err := r.RemoveContainer(ctx, id); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", id, err)
	}
	return os.RemoveAll(r.sandboxDir(id))
}

// ListSandboxes implements Runtime.
func (r *Containerd) ListSandboxes(ctx context.Context, podUID string) ([]Sandbox, error) {
	ctrs, err := r.c.Containers(ctx, listFilter("sandbox", podUID))
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	if len(ctrs) == 0 {
		return nil, nil
	}
	procs, err := r.tasks(ctx, podUID, ctrs)
	if err != nil {
		return nil, fmt.Errorf("list sandboxes: %w", err)
	}
	return sandboxesFrom(ctx, ctrs, procs), nil
}

// ListPod implements Runtime with one containerd list for both kinds.
func (r *Containerd) ListPod(ctx context.Context, podUID string) ([]Sandbox, []ContainerStatus, error) {
	ctrs, err := r.c.Containers(ctx, fmt.Sprintf(`labels."%s"==%q`, LabelPodUID, podUID))
	if err != nil {
		return nil, nil, fmt.Errorf("list pod %s: %w", podUID, err)
	}
	procs, err := r.tasks(ctx, podUID, ctrs)
	if err != nil {
		return nil, nil, fmt.Errorf("list pod %s: %w", podUID, err)
	}
	var sbs, cs []client.Container
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		switch info.Labels[LabelKind] {
		case "sandbox":
			sbs = append(sbs, c)
		case "container":
			cs = append(cs, c)
		}
	}
	statuses, err := r.containersFrom(ctx, cs, procs)
	if err != nil {
		return nil, nil, fmt.Errorf("list pod %s: %w", podUID, err)
	}
	return sandboxesFrom(ctx, sbs, procs), statuses, nil
}

func sandboxesFrom(ctx context.Context, ctrs []client.Container, procs map[string]*tasktypes.Process) []Sandbox {
	var out []Sandbox
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		sb := Sandbox{ID: c.ID(), Pod: podFromLabels(info.Labels), State: SandboxNotReady, IP: info.Labels[LabelIP], NetNSPath: info.Labels[LabelNetNS], CreatedAt: info.CreatedAt}
		if t, err := time.Parse(time.RFC3339Nano, info.Labels[LabelClaimedAt]); err == nil {
			sb.CreatedAt = t
		}
		if p := procs[c.ID()]; p != nil && p.Status == tasktypes.Status_RUNNING {
			sb.State, sb.Pid = SandboxReady, p.Pid
		}
		out = append(out, sb)
	}
	return out
}

// securityOpts turns a security context into spec options. The user is applied after the
// image config, so runAsUser overrides the image's USER.
func securityOpts(sec Security) []oci.SpecOpts {
	var opts []oci.SpecOpts
	switch {
	case sec.RunAsUser != nil && sec.RunAsGroup != nil:
		opts = append(opts, oci.WithUIDGID(uint32(*sec.RunAsUser), uint32(*sec.RunAsGroup)))
	case sec.RunAsUser != nil:
		opts = append(opts, oci.WithUserID(uint32(*sec.RunAsUser)))
	}
	if sec.RunAsUser == nil && sec.RunAsGroup != nil {
		gid := uint32(*sec.RunAsGroup)
		opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
			s.Process.User.GID = gid
			return nil
		})
	}
	if sec.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithAllDevicesAllowed, oci.WithHostDevices)
	}
	if sec.ReadOnlyRootFS {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	if sec.NoNewPrivileges {
		opts = append(opts, oci.WithNoNewPrivileges)
	}
	capName := func(c string) string {
		c = strings.ToUpper(c)
		if !strings.HasPrefix(c, "CAP_") {
			c = "CAP_" + c
		}
		return c
	}
	var drop []string
	for _, c := range sec.DropCaps {
		if strings.EqualFold(c, "ALL") {
			opts = append(opts, func(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
				if s.Process.Capabilities != nil {
					s.Process.Capabilities = &specs.LinuxCapabilities{}
				}
				return nil
			})
			continue
		}
		drop = append(drop, capName(c))
	}
	if len(drop) > 0 {
		opts = append(opts, oci.WithDroppedCapabilities(drop))
	}
	var add []string
	for _, c := range sec.AddCaps {
		add = append(add, capName(c))
	}
	if len(add) > 0 {
		opts = append(opts, oci.WithAddedCapabilities(add))
	}
	return opts
}

func listFilter(kind, podUID string) string {
	f := fmt.Sprintf(`labels."%s"==%s`, LabelKind, kind)
	if podUID != "" {
		f += fmt.Sprintf(`,labels."%s"==%q`, LabelPodUID, podUID)
	}
	return f
}

// ResolveArgs applies Kubernetes' rules for command and args over an image's entrypoint
// and cmd: command replaces the entrypoint and drops the image's cmd; args replace the cmd.
func ResolveArgs(entrypoint, cmd, command, args []string) []string {
	if len(command) > 0 {
		return append(append([]string(nil), command...), args...)
	}
	if len(args) > 0 {
		return append(append([]string(nil), entrypoint...), args...)
	}
	return append(append([]string(nil), entrypoint...), cmd...)
}

// CreateContainer implements Runtime.
func (r *Containerd) CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (_ string, retErr error) {
	defer r.pool.busy()()
	sb, err := r.c.ContainerService().Get(ctx, sandboxID)
	if err != nil {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, wrapNotFound(errgrpc.ToNative(err)))
	}
	sbLabels := sb.Labels
	t, err := r.taskOf(ctx, sandboxID)
	if err != nil {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, err)
	}
	if t == nil || t.Status != tasktypes.Status_RUNNING {
		return "", fmt.Errorf("create container %s: sandbox %s is %w", cfg.Name, sandboxID, ErrNotRunning)
	}
	pid := t.Pid
	pidNS, err := r.pidNamespace(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	img, err := r.c.GetImage(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("create container %s: image %s: %w", cfg.Name, cfg.Image, wrapNotFound(err))
	}
	iinfo, err := r.images.get(ctx, img)
	if err != nil {
		return "", fmt.Errorf("create container %s: image %s config: %w", cfg.Name, cfg.Image, err)
	}
	args := ResolveArgs(iinfo.config.Config.Entrypoint, iinfo.config.Config.Cmd, cfg.Command, cfg.Args)
	if len(args) == 0 {
		return "", fmt.Errorf("create container %s: no command: image %s has no entrypoint or cmd and the pod gives none", cfg.Name, cfg.Image)
	}
	if cfg.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o755); err != nil {
			return "", fmt.Errorf("create container %s: log dir: %w", cfg.Name, err)
		}
	}
	mounts := r.podFileMounts(sandboxID)
	for _, m := range cfg.Mounts {
		mode := "rw"
		if m.ReadOnly {
			mode = "ro"
		}
		mounts = append(mounts, specs.Mount{Type: "bind", Source: m.HostPath, Destination: m.ContainerPath, Options: []string{"rbind", mode}})
	}
	opts := []oci.SpecOpts{
		r.images.withImageConfig(img, iinfo),
		oci.WithProcessArgs(args...),
		oci.WithEnv(cfg.Env),
		oci.WithMounts(mounts),
		oci.WithAnnotations(map[string]string{labelShimGroup: sandboxID}),
	}
	if cfg.HostIPC {
		opts = append(opts, oci.WithHostNamespace(specs.IPCNamespace))
	} else {
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.IPCNamespace, Path: fmt.Sprintf("/proc/%d/ns/ipc", pid)}))
	}
	if pidNS != nil {
		opts = append(opts, pidNS)
	}
	if sbLabels[LabelHostNetwork] == "true" {
		opts = append(opts, oci.WithHostNamespace(specs.NetworkNamespace), oci.WithHostNamespace(specs.UTSNamespace))
	} else {
		opts = append(opts,
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: sbLabels[LabelNetNS]}),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.UTSNamespace, Path: fmt.Sprintf("/proc/%d/ns/uts", pid)}))
	}
	opts = append(opts, cgroupOpts(cfg.Security.Privileged)...)
	opts = append(opts, r.opts.OCIRuntime.specOpt())
	opts = append(opts, securityOpts(cfg.Security)...)
	if cfg.TTY {
		opts = append(opts, oci.WithTTY)
	}
	if cfg.WorkingDir != "" {
		opts = append(opts, oci.WithProcessCwd(cfg.WorkingDir))
	}
	if res := cfg.Resources; res.MemoryLimitBytes > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(res.MemoryLimitBytes)))
	}
	if res := cfg.Resources; res.CPUQuota > 0 {
		opts = append(opts, oci.WithCPUCFS(res.CPUQuota, res.CPUPeriod))
	}
	if res := cfg.Resources; res.CPUShares > 0 {
		opts = append(opts, oci.WithCPUShares(res.CPUShares))
	}
	id := newID()
	labels := podLabels(podFromLabels(sbLabels))
	labels[LabelKind] = "container"
	labels[LabelSandboxID] = sandboxID
	labels[LabelName] = cfg.Name
	labels[LabelAttempt] = strconv.Itoa(cfg.Attempt)
	labels[LabelLogPath] = cfg.LogPath
	labels[LabelStdin] = strconv.FormatBool(cfg.Stdin)
	labels[LabelStdinOnce] = strconv.FormatBool(cfg.StdinOnce)
	labels[LabelTTY] = strconv.FormatBool(cfg.TTY)
	labels[LabelImageRef] = img.Name() + "@" + img.Target().Digest.String()
	labels[labelShimGroup] = sandboxID
	_, err = r.c.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.opts.Snapshotter),
		withSnapshot(id, img, iinfo),
		client.WithRuntime(runcV2, r.opts.OCIRuntime.shimOptions()),
		client.WithContainerLabels(labels),
		client.WithNewSpec(opts...),
	)
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", cfg.Name, err)
	}
	return id, nil
}

// pidNamespace is the PID namespace option of cfg: the host's, a target container's
// (/proc/<its pid>/ns/pid, as containerd's CRI plugin joins a target), or nil for a
// namespace of the container's own.
func (r *Containerd) pidNamespace(ctx context.Context, cfg ContainerConfig) (oci.SpecOpts, error) {
	switch {
	case cfg.HostPID:
		return oci.WithHostNamespace(specs.PIDNamespace), nil
	case cfg.TargetContainerID == "":
		return nil, nil
	}
	t, err := r.taskOf(ctx, cfg.TargetContainerID)
	if err != nil {
		return nil, fmt.Errorf("target container %s: %w", cfg.TargetContainerID, err)
	}
	if t == nil || t.Status != tasktypes.Status_RUNNING {
		return nil, fmt.Errorf("target container %s is %w", cfg.TargetContainerID, ErrNotRunning)
	}
	return oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", t.Pid)}), nil
}

// StartContainer implements Runtime. The container's stdio ends in the kubelet (a
// containerIO): its output is written to the log in the CRI format and to attached
// clients, as containerd's CRI plugin does; the shim keeps the fifos open, so a kubelet
// restart only delays output until recoverIO attaches again.
func (r *Containerd) StartContainer(ctx context.Context, id string) error {
	defer r.pool.busy()()
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, wrapNotFound(err))
	}
	info, err := c.Info(ctx, client.WithoutRefreshedMetadata) // as loaded: no round trip
	if err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	labels := info.Labels
	ioc, hub, err := r.startIO(id, labels[LabelLogPath], labels[LabelTTY] == "true", labels[LabelStdin] == "true", labels[LabelStdinOnce] == "true")
	if err != nil {
		return fmt.Errorf("start container %s (%s): %w", labels[LabelName], id, err)
	}
	task, err := c.NewTask(ctx, ioc)
	if err != nil {
		return fmt.Errorf("start container %s (%s): %w", labels[LabelName], id, err)
	}
	hub.closeIO = func() { _ = task.CloseIO(context.Background(), client.WithStdinCloser) }
	if err := task.Start(ctx); err != nil {
		_, _ = task.Delete(context.WithoutCancel(ctx), client.WithProcessKill)
		return fmt.Errorf("start container %s (%s): %w", labels[LabelName], id, err)
	}
	if _, err := r.setLabels(ctx, id, map[string]string{LabelStartedAt: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		return fmt.Errorf("start container %s: record start time: %w", id, err)
	}
	return nil
}

// setLabels sets labels on container id in one round trip (client.Container.SetLabels
// reads the container first) and returns the updated container.
func (r *Containerd) setLabels(ctx context.Context, id string, labels map[string]string) (containers.Container, error) {
	paths := make([]string, 0, len(labels))
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	c, err := r.c.ContainerService().Update(ctx, containers.Container{ID: id, Labels: labels}, paths...)
	if err != nil {
		return c, errgrpc.ToNative(err)
	}
	return c, nil
}

// killTask signals a task to stop (SIGTERM, then SIGKILL after timeout) and waits for it.
func (r *Containerd) killTask(ctx context.Context, c client.Container, timeout time.Duration) error {
	task, err := c.Task(ctx, nil)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return err
	}
	st, err := task.Status(ctx)
	if err != nil {
		return err
	}
	if st.Status == client.Stopped {
		return nil
	}
	if st.Status == client.Created {
		_, err := task.Delete(ctx, client.WithProcessKill)
		return err
	}
	exited, err := task.Wait(ctx)
	if err != nil {
		return err
	}
	if timeout > 0 {
		if err := task.Kill(ctx, syscall.SIGTERM); err != nil && !errdefs.IsNotFound(err) {
			return err
		}
		select {
		case <-exited:
			return nil
		case <-time.After(timeout):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := task.Kill(ctx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return err
	}
	select {
	case <-exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StopContainer implements Runtime.
func (r *Containerd) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	if err := r.killTask(ctx, c, timeout); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

// RemoveContainer implements Runtime; removing a missing container is not an error.
func (r *Containerd) RemoveContainer(ctx context.Context, id string) error {
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	if task, err := c.Task(ctx, nil); err == nil {
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return fmt.Errorf("remove container %s: delete task: %w", id, err)
		}
	}
	if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

// ListContainers implements Runtime: every non-sandbox container of this namespace.
func (r *Containerd) ListContainers(ctx context.Context, podUID string) ([]ContainerStatus, error) {
	ctrs, err := r.c.Containers(ctx, listFilter("container", podUID))
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	if len(ctrs) == 0 {
		return []ContainerStatus{}, nil
	}
	procs, err := r.tasks(ctx, podUID, ctrs)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	out, err := r.containersFrom(ctx, ctrs, procs)
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return out, nil
}

func (r *Containerd) containersFrom(ctx context.Context, ctrs []client.Container, procs map[string]*tasktypes.Process) ([]ContainerStatus, error) {
	out := make([]ContainerStatus, 0, len(ctrs))
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			return nil, err
		}
		st, err := r.statusFromProcess(ctx, c, info, procs[c.ID()])
		if err != nil {
			if errdefs.IsNotFound(err) {
				continue // removed meanwhile
			}
			return nil, err
		}
		out = append(out, *st)
	}
	return out, nil
}

// ContainerStatus implements Runtime.
func (r *Containerd) ContainerStatus(ctx context.Context, id string) (*ContainerStatus, error) {
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, wrapNotFound(err))
	}
	return r.status(ctx, c)
}

// tasks returns the task (process) of each container in ctrs, keyed by container id. For
// one pod it asks for each container's task (a pod has a few); for the whole node it lists
// every task in one call. Listing all tasks costs a shim round trip per task on the node, so
// per-pod lists that used it made a node with N pods do O(N) shim calls per pod sync.
func (r *Containerd) tasks(ctx context.Context, podUID string, ctrs []client.Container) (map[string]*tasktypes.Process, error) {
	m := make(map[string]*tasktypes.Process, len(ctrs))
	if podUID != "" {
		for _, c := range ctrs {
			p, err := r.taskOf(ctx, c.ID())
			if err != nil {
				return nil, err
			}
			if p != nil {
				m[c.ID()] = p
			}
		}
		return m, nil
	}
	resp, err := r.c.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
	if err != nil {
		return nil, err
	}
	for _, p := range resp.Tasks {
		m[p.ID] = p
	}
	return m, nil
}

// taskOf returns the task of container id, or nil when it has none.
func (r *Containerd) taskOf(ctx context.Context, id string) (*tasktypes.Process, error) {
	resp, err := r.c.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: id})
	switch {
	case err == nil:
		return resp.Process, nil
	case errdefs.IsNotFound(errgrpc.ToNative(err)):
		return nil, nil
	default:
		return nil, errgrpc.ToNative(err)
	}
}

func (r *Containerd) status(ctx context.Context, c client.Container) (*ContainerStatus, error) {
	info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return nil, err
	}
	p, err := r.taskOf(ctx, c.ID())
	if err != nil {
		return nil, err
	}
	return r.statusFromProcess(ctx, c, info, p)
}

// statusFromProcess builds a status from the container's metadata and its task (nil when
// it has none); it makes no call unless an exit looks like an OOM kill.
func (r *Containerd) statusFromProcess(ctx context.Context, c client.Container, info containers.Container, p *tasktypes.Process) (*ContainerStatus, error) {
	l := info.Labels
	attempt, _ := strconv.Atoi(l[LabelAttempt])
	st := &ContainerStatus{
		ID: info.ID, SandboxID: l[LabelSandboxID], Pod: podFromLabels(l), Name: l[LabelName], Attempt: attempt,
		Image: info.Image, ImageRef: l[LabelImageRef], State: ContainerCreated, CreatedAt: info.CreatedAt,
		LogPath: l[LabelLogPath], OOMKilled: l[LabelOOM] == "true",
	}
	if ts := l[LabelStartedAt]; ts != "" {
		st.StartedAt, _ = time.Parse(time.RFC3339Nano, ts)
	}
	if p == nil {
		if !st.StartedAt.IsZero() {
			// Started once, but its task is gone (containerd lost it): report it as exited
			// so the kubelet replaces it.
			st.State, st.ExitCode = ContainerUnknown, 255
		}
		return st, nil
	}
	switch p.Status {
	case tasktypes.Status_RUNNING, tasktypes.Status_PAUSED, tasktypes.Status_PAUSING:
		st.State = ContainerRunning
	case tasktypes.Status_STOPPED:
		st.State, st.ExitCode = ContainerExited, int32(p.ExitStatus)
		if p.ExitedAt != nil {
			st.FinishedAt = p.ExitedAt.AsTime()
		}
		if st.ExitCode == 137 && !st.OOMKilled && r.oomKilled(ctx, c) {
			// The exit was seen before containerd's OOM event was handled: ask the cgroup.
			st.OOMKilled = true
			_, _ = r.setLabels(ctx, c.ID(), map[string]string{LabelOOM: "true"})
		}
	case tasktypes.Status_CREATED:
		st.State = ContainerCreated
	default:
		st.State = ContainerUnknown
	}
	return st, nil
}

// oomKilled reads the container's memory cgroup (still present while its exited task is
// not deleted) for an OOM kill: memory.oom_control on cgroup v1, memory.events on v2.
func (r *Containerd) oomKilled(ctx context.Context, c client.Container) bool {
	spec, err := c.Spec(ctx)
	if err != nil || spec.Linux == nil || spec.Linux.CgroupsPath == "" {
		return false
	}
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", spec.Linux.CgroupsPath, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", spec.Linux.CgroupsPath, "memory.events"),
	} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			if n, ok := strings.CutPrefix(line, "oom_kill "); ok && strings.TrimSpace(n) != "0" {
				return true
			}
		}
	}
	return false
}

// ExecSync implements Runtime.
func (r *Containerd) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecResult, error) {
	if len(cmd) == 0 {
		return nil, fmt.Errorf("exec in container %s: empty command", id)
	}
	c, err := r.c.LoadContainer(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, wrapNotFound(err))
	}
	task, err := c.Task(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w: %w", id, ErrNotRunning, err)
	}
	spec, err := c.Spec(ctx)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	pspec := *spec.Process
	pspec.Args = cmd
	pspec.Terminal = false
	var stdout, stderr bytes.Buffer
	proc, err := task.Exec(ctx, "exec-"+newID()[:12], &pspec,
		cio.NewCreator(cio.WithStreams(nil, &stdout, &stderr), cio.WithFIFODir(filepath.Join(r.opts.RootDir, "fifo"))))
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	bg := context.WithoutCancel(ctx)
	defer proc.Delete(bg, client.WithProcessKill)
	exited, err := proc.Wait(ctx)
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	if err := proc.Start(ctx); err != nil {
		return nil, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	if timeout <= 0 {
		timeout = time.Hour
	}
	var es client.ExitStatus
	select {
	case es = <-exited:
	case <-time.After(timeout):
		_ = proc.Kill(bg, syscall.SIGKILL)
		<-exited
		return nil, fmt.Errorf("exec %q in container %s: %w after %s", cmd[0], id, ErrTimeout, timeout)
	case <-ctx.Done():
		_ = proc.Kill(bg, syscall.SIGKILL)
		return nil, ctx.Err()
	}
	proc.IO().Wait()
	return &ExecResult{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: int(es.ExitCode())}, nil
}

// PullImage implements Runtime. Registries on loopback are reached over plain HTTP.
func (r *Containerd) PullImage(ctx context.Context, ref string, auth *PullAuth) (string, error) {
	name, err := NormalizeImage(ref)
	if err != nil {
		return "", err
	}
	ropts := []docker.RegistryOpt{docker.WithPlainHTTP(docker.MatchLocalhost)}
	if auth != nil {
		ropts = append(ropts, docker.WithAuthorizer(docker.NewDockerAuthorizer(docker.WithAuthCreds(func(string) (string, string, error) {
			return auth.Username, auth.Password, nil
		}))))
	}
	resolver := docker.NewResolver(docker.ResolverOptions{Hosts: docker.ConfigureDefaultRegistries(ropts...)})
	img, err := r.c.Pull(ctx, name, client.WithResolver(resolver), client.WithPullUnpack, client.WithPullSnapshotter(r.opts.Snapshotter))
	if err != nil {
		return "", fmt.Errorf("pull image %s: %w", name, err)
	}
	return img.Target().Digest.String(), nil
}

// ImageStatus implements Runtime. An image that is present but not unpacked for the
// snapshotter (an import by another tool) is unpacked here.
func (r *Containerd) ImageStatus(ctx context.Context, ref string) (*Image, error) {
	name, err := NormalizeImage(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.c.GetImage(ctx, name)
	if err != nil {
		if errdefs.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	ok, err := img.IsUnpacked(ctx, r.opts.Snapshotter)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	if !ok {
		if err := img.Unpack(ctx, r.opts.Snapshotter); err != nil {
			return nil, fmt.Errorf("image %s: unpack: %w", name, err)
		}
	}
	size, _ := img.Size(ctx)
	return &Image{Ref: name, Digest: img.Target().Digest.String(), Size: size}, nil
}

var _ Runtime = (*Containerd)(nil)
