package runtime

import (
	"context"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	tasktypes "github.com/containerd/containerd/api/types/task"
	client "github.com/containerd/containerd/v2/client"
	"golang.org/x/sys/unix"
)

// The warm pool keeps a few pod sandboxes created ahead of the pods that will use them:
// network namespace wired by CNI with an IP, the pause container running under its own
// shim. Most of a pod's start-up cost on a small node is there (a shim, two runc
// invocations and three CNI plugins, against two runc invocations for an app container),
// so a pod that takes a warm sandbox only creates its containers.
//
// A warm sandbox is a containerd container labelled kind=warm-sandbox and no pod, so the
// kubelet's lists (kind=sandbox) do not see it. Claiming it gives it to a pod: the UTS
// namespace gets the pod's hostname, /etc/hosts, /etc/hostname and /etc/resolv.conf are
// written for the pod, and the labels become those of a pod sandbox; from then on it is an
// ordinary sandbox. The pool refills only while no pod is being set up, so it never takes
// CPU from the pods it exists to speed up. Warm sandboxes survive a kubelet restart (the
// next kubelet takes them back into its pool) and are removed by DrainWarmPool.
const kindWarm = "warm-sandbox"

// warmQuiet is how long pod set-up must have been idle before the pool refills.
const warmQuiet = 300 * time.Millisecond

type warmSandbox struct {
	id, ip, netns string
	pid           uint32
}

type warmPool struct {
	mu       sync.Mutex
	image    string
	ready    []warmSandbox
	claiming map[string]bool // popped for a claim that has not finished
	kick     chan struct{}
	active   atomic.Int32 // pod sandbox and container operations in flight
	last     atomic.Int64 // when the last one ended (unix nanoseconds)
}

// busy marks a pod set-up operation; call the result when it ends.
func (p *warmPool) busy() func() {
	p.active.Add(1)
	return func() {
		p.last.Store(time.Now().UnixNano())
		p.active.Add(-1)
	}
}

func (p *warmPool) quiet() bool {
	return p.active.Load() == 0 && time.Since(time.Unix(0, p.last.Load())) >= warmQuiet
}

func (p *warmPool) pop() (warmSandbox, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ready) == 0 {
		return warmSandbox{}, false
	}
	w := p.ready[0]
	p.ready = p.ready[1:]
	if p.claiming == nil {
		p.claiming = map[string]bool{}
	}
	p.claiming[w.id] = true
	return w, true
}

// claimed ends the claim of id that pop started, whatever became of it.
func (p *warmPool) claimed(id string) {
	p.mu.Lock()
	delete(p.claiming, id)
	p.mu.Unlock()
}

func (p *warmPool) push(w warmSandbox) {
	p.mu.Lock()
	p.ready = append(p.ready, w)
	p.mu.Unlock()
}

// WarmSandboxes is how many warm sandboxes are ready to be claimed.
func (r *Containerd) WarmSandboxes() int {
	r.pool.mu.Lock()
	defer r.pool.mu.Unlock()
	return len(r.pool.ready)
}

// RunWarmPool keeps n warm sandboxes of the pause image ready until ctx ends. It first takes
// back the warm sandboxes a previous kubelet left and removes those that no longer run.
// n <= 0 only does the taking back, as removal.
func (r *Containerd) RunWarmPool(ctx context.Context, n int, pauseImage string) {
	r.pool.mu.Lock()
	r.pool.image = pauseImage
	r.pool.mu.Unlock()
	r.adoptWarm(ctx, n)
	if n <= 0 {
		return
	}
	tick := time.NewTicker(warmQuiet)
	defer tick.Stop()
	for ticks := 0; ; ticks++ {
		if ticks%10 == 0 {
			r.sweepWarm(ctx)
		}
		for ctx.Err() == nil && r.WarmSandboxes() < n && r.pool.quiet() {
			sb, err := r.newSandbox(ctx, SandboxConfig{Hostname: "warm", Image: pauseImage}, kindWarm)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Warn("create warm sandbox", "err", err)
				}
				break // try again on the next tick
			}
			r.pool.push(warmSandbox{id: sb.ID, ip: sb.IP, netns: sb.NetNSPath, pid: sb.Pid})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-r.pool.kick:
		}
	}
}

// sweepWarm removes the warm sandboxes whose pause process is gone, so their IPs and
// network namespaces do not wait for a claim, and retries the removal of warm sandboxes
// that are neither ready nor being claimed (a removal that failed before).
func (r *Containerd) sweepWarm(ctx context.Context) {
	r.pool.mu.Lock()
	var dead []warmSandbox
	live := r.pool.ready[:0]
	known := map[string]bool{}
	for _, w := range r.pool.ready {
		if unix.Kill(int(w.pid), 0) == unix.ESRCH {
			dead = append(dead, w)
		} else {
			live = append(live, w)
			known[w.id] = true
		}
	}
	r.pool.ready = live
	for id := range r.pool.claiming {
		known[id] = true
	}
	r.pool.mu.Unlock()
	for _, w := range dead {
		r.discardWarm(ctx, w.id, "its pause exited")
	}
	ctrs, err := r.c.Containers(ctx, fmt.Sprintf(`labels."%s"==%s`, LabelKind, kindWarm))
	if err != nil {
		return
	}
	for _, c := range ctrs {
		if !known[c.ID()] {
			r.discardWarm(ctx, c.ID(), "left over")
		}
	}
}

// discardWarm removes a warm sandbox; if that fails, the next sweep tries again. why is
// logged as a warning unless it is empty (a drain on shutdown is not news).
func (r *Containerd) discardWarm(ctx context.Context, id, why string) {
	if why != "" {
		r.log.Warn("removing warm sandbox", "sandbox", id, "why", why)
	}
	if err := r.RemovePodSandbox(context.WithoutCancel(ctx), id); err != nil {
		r.log.Warn("remove warm sandbox", "sandbox", id, "err", err)
	}
}

// adoptWarm takes running warm sandboxes back into the pool (up to n) and removes the rest.
func (r *Containerd) adoptWarm(ctx context.Context, n int) {
	ctrs, err := r.c.Containers(ctx, fmt.Sprintf(`labels."%s"==%s`, LabelKind, kindWarm))
	if err != nil {
		r.log.Warn("list warm sandboxes", "err", err)
		return
	}
	r.pool.mu.Lock()
	image := r.pool.image
	r.pool.mu.Unlock()
	for _, c := range ctrs {
		info, err := c.Info(ctx, client.WithoutRefreshedMetadata)
		if err != nil {
			continue
		}
		// Only sandboxes of the pause image this kubelet uses fit its pods.
		if t, _ := r.taskOf(ctx, c.ID()); t != nil && t.Status == tasktypes.Status_RUNNING && info.Image == image && r.WarmSandboxes() < n {
			r.pool.push(warmSandbox{id: c.ID(), ip: info.Labels[LabelIP], netns: info.Labels[LabelNetNS], pid: t.Pid})
			continue
		}
		why := "not taken back (stopped, another pause image, or more than the pool's size)"
		if n <= 0 {
			why = "" // draining
		}
		r.discardWarm(ctx, c.ID(), why)
	}
}

// DrainWarmPool removes every warm sandbox of the node, also those a previous kubelet left.
func (r *Containerd) DrainWarmPool(ctx context.Context) {
	r.pool.mu.Lock()
	r.pool.ready = nil
	r.pool.mu.Unlock()
	r.adoptWarm(ctx, 0)
}

// claimWarm gives a warm sandbox to the pod of cfg, or returns nil when the pool has none
// that fits (host network, another pause image). A warm sandbox whose pause has died is
// removed and the next one tried.
func (r *Containerd) claimWarm(ctx context.Context, cfg SandboxConfig) (*Sandbox, error) {
	r.pool.mu.Lock()
	fits := r.pool.image != "" && cfg.Image == r.pool.image && !cfg.HostNetwork
	r.pool.mu.Unlock()
	if !fits {
		return nil, nil
	}
	defer func() {
		select {
		case r.pool.kick <- struct{}{}:
		default:
		}
	}()
	for {
		w, ok := r.pool.pop()
		if !ok {
			return nil, nil
		}
		sb, err := r.claim(ctx, w, cfg)
		if err == nil {
			r.pool.claimed(w.id)
			return sb, nil
		}
		// It may be half given to the pod (hostname, files, labels): never back to the pool.
		r.discardWarm(ctx, w.id, "claim failed: "+err.Error())
		r.pool.claimed(w.id)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
}

func (r *Containerd) claim(ctx context.Context, w warmSandbox, cfg SandboxConfig) (*Sandbox, error) {
	t, err := r.taskOf(ctx, w.id)
	if err != nil {
		return nil, err
	}
	if t == nil || t.Status != tasktypes.Status_RUNNING {
		return nil, fmt.Errorf("pause is not running")
	}
	hostname := cfg.Hostname
	if hostname == "" {
		hostname = cfg.Pod.Name
	}
	w.pid = t.Pid // the pause's pid as containerd knows it now, not as remembered
	if err := setHostname(w.pid, hostname); err != nil {
		return nil, err
	}
	if err := r.writePodFiles(w.id, w.ip, hostname, cfg.HostDomain, cfg.ResolvConf); err != nil {
		return nil, err
	}
	labels := podLabels(cfg.Pod)
	labels[LabelKind] = "sandbox"
	now := time.Now().UTC()
	labels[LabelClaimedAt] = now.Format(time.RFC3339Nano) // the pod's sandbox is as old as the claim
	if _, err := r.setLabels(ctx, w.id, labels); err != nil {
		return nil, err
	}
	r.log.Debug("sandbox from warm pool", "pod", cfg.Pod.Namespace+"/"+cfg.Pod.Name, "sandbox", w.id)
	return &Sandbox{ID: w.id, Pod: cfg.Pod, State: SandboxReady, IP: w.ip, NetNSPath: w.netns, Pid: w.pid, CreatedAt: now}, nil
}

// setHostname sets the hostname of the UTS namespace of process pid.
func setHostname(pid uint32, name string) error {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/uts", pid))
	if err != nil {
		return fmt.Errorf("set hostname: %w", err)
	}
	defer f.Close()
	errc := make(chan error, 1)
	go func() {
		// The thread is left in the pod's namespace and never unlocked, so Go retires it
		// when this goroutine ends instead of reusing it.
		goruntime.LockOSThread()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWUTS); err != nil {
			errc <- fmt.Errorf("set hostname: enter UTS namespace of %d: %w", pid, err)
			return
		}
		if err := unix.Sethostname([]byte(name)); err != nil {
			errc <- fmt.Errorf("set hostname %q: %w", name, err)
			return
		}
		errc <- nil
	}()
	return <-errc
}
