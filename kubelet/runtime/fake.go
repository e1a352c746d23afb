package runtime

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Fake is an in-memory Runtime: containers "run" until a test (or Behavior) makes them exit.
// It backs unit tests of the pod worker and simulated (hollow) nodes.
type Fake struct {
	// Behavior, when set, decides at start whether a container exits at once and with what
	// code; otherwise containers run until Exit or StopContainer.
	Behavior func(cfg ContainerConfig) (exits bool, code int32)
	// Exec, when set, answers ExecSync; otherwise every exec exits 0.
	Exec func(c ContainerStatus, cmd []string) *ExecResult

	mu         sync.Mutex
	next       int
	sandboxes  map[string]*Sandbox
	containers map[string]*fakeContainer
	images     map[string]bool
	calls      []string
}

type fakeContainer struct {
	st  ContainerStatus
	cfg ContainerConfig
}

// NewFake returns a Fake that already holds images.
func NewFake(images ...string) *Fake {
	f := &Fake{sandboxes: map[string]*Sandbox{}, containers: map[string]*fakeContainer{}, images: map[string]bool{}}
	for _, i := range images {
		if n, err := NormalizeImage(i); err == nil {
			f.images[n] = true
		}
	}
	return f
}

// Calls returns the operations performed so far, e.g. "StartContainer app".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Fake) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *Fake) id(prefix string) string {
	f.next++
	return fmt.Sprintf("%s%d", prefix, f.next)
}

// Exit makes a running container exit with code.
func (f *Fake) Exit(id string, code int32, oom bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok && c.st.State == ContainerRunning {
		c.st.State, c.st.ExitCode, c.st.OOMKilled, c.st.FinishedAt = ContainerExited, code, oom, time.Now()
	}
}

// Version implements Runtime.
func (f *Fake) Version(context.Context) (string, error) { return "fake://0.1.0", nil }

// RunPodSandbox implements Runtime.
func (f *Fake) RunPodSandbox(_ context.Context, cfg SandboxConfig) (*Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.id("sb")
	sb := &Sandbox{ID: id, Pod: cfg.Pod, State: SandboxReady, IP: fmt.Sprintf("10.99.%d.%d", f.next/250, f.next%250+1), CreatedAt: time.Now()}
	if cfg.HostNetwork {
		sb.IP = cfg.HostIP
	}
	f.sandboxes[id] = sb
	f.record("RunPodSandbox %s", cfg.Pod.Name)
	cp := *sb
	return &cp, nil
}

// StopPodSandbox implements Runtime.
func (f *Fake) StopPodSandbox(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[id]
	if !ok {
		return nil
	}
	for _, c := range f.containers {
		if c.st.SandboxID == id && c.st.State == ContainerRunning {
			c.st.State, c.st.ExitCode, c.st.FinishedAt = ContainerExited, 137, time.Now()
		}
	}
	sb.State = SandboxNotReady
	f.record("StopPodSandbox %s", sb.Pod.Name)
	return nil
}

// RemovePodSandbox implements Runtime.
func (f *Fake) RemovePodSandbox(ctx context.Context, id string) error {
	_ = f.StopPodSandbox(ctx, id)
	f.mu.Lock()
	defer f.mu.Unlock()
	for cid, c := range f.containers {
		if c.st.SandboxID == id {
			delete(f.containers, cid)
		}
	}
	if sb, ok := f.sandboxes[id]; ok {
		f.record("RemovePodSandbox %s", sb.Pod.Name)
	}
	delete(f.sandboxes, id)
	return nil
}

// ListSandboxes implements Runtime.
func (f *Fake) ListSandboxes(_ context.Context, podUID string) ([]Sandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Sandbox
	for _, sb := range f.sandboxes {
		if podUID == "" || sb.Pod.UID == podUID {
			out = append(out, *sb)
		}
	}
	return out, nil
}

// ListPod implements Runtime.
func (f *Fake) ListPod(ctx context.Context, podUID string) ([]Sandbox, []ContainerStatus, error) {
	sbs, _ := f.ListSandboxes(ctx, podUID)
	cs, _ := f.ListContainers(ctx, podUID)
	return sbs, cs, nil
}

// CreateContainer implements Runtime.
func (f *Fake) CreateContainer(_ context.Context, sandboxID string, cfg ContainerConfig) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[sandboxID]
	if !ok || sb.State != SandboxReady {
		return "", fmt.Errorf("create container %s: sandbox %s: %w", cfg.Name, sandboxID, ErrNotFound)
	}
	name, err := NormalizeImage(cfg.Image)
	if err != nil {
		return "", err
	}
	if !f.images[name] {
		return "", fmt.Errorf("create container %s: image %s: %w", cfg.Name, cfg.Image, ErrNotFound)
	}
	id := f.id("c")
	f.containers[id] = &fakeContainer{cfg: cfg, st: ContainerStatus{
		ID: id, SandboxID: sandboxID, Pod: sb.Pod, Name: cfg.Name, Attempt: cfg.Attempt, Image: name,
		State: ContainerCreated, CreatedAt: time.Now(), LogPath: cfg.LogPath,
	}}
	f.record("CreateContainer %s", cfg.Name)
	return id, nil
}

// StartContainer implements Runtime.
func (f *Fake) StartContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return fmt.Errorf("start container %s: %w", id, ErrNotFound)
	}
	c.st.State, c.st.StartedAt = ContainerRunning, time.Now()
	if f.Behavior != nil {
		if exits, code := f.Behavior(c.cfg); exits {
			c.st.State, c.st.ExitCode, c.st.FinishedAt = ContainerExited, code, time.Now()
		}
	}
	f.record("StartContainer %s", c.cfg.Name)
	return nil
}

// StopContainer implements Runtime: the fake's containers die on SIGTERM with code 143.
func (f *Fake) StopContainer(_ context.Context, id string, timeout time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		if c.st.State == ContainerRunning {
			c.st.State, c.st.ExitCode, c.st.FinishedAt = ContainerExited, 143, time.Now()
		}
		f.record("StopContainer %s", c.cfg.Name)
	}
	return nil
}

// RemoveContainer implements Runtime.
func (f *Fake) RemoveContainer(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok {
		f.record("RemoveContainer %s", c.cfg.Name)
	}
	delete(f.containers, id)
	return nil
}

// ListContainers implements Runtime.
func (f *Fake) ListContainers(_ context.Context, podUID string) ([]ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ContainerStatus
	for _, c := range f.containers {
		if podUID == "" || c.st.Pod.UID == podUID {
			out = append(out, c.st)
		}
	}
	return out, nil
}

// ContainerStatus implements Runtime.
func (f *Fake) ContainerStatus(_ context.Context, id string) (*ContainerStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, ErrNotFound)
	}
	st := c.st
	return &st, nil
}

// ExecSync implements Runtime.
func (f *Fake) ExecSync(_ context.Context, id string, cmd []string, _ time.Duration) (*ExecResult, error) {
	f.mu.Lock()
	c, ok := f.containers[id]
	var st ContainerStatus
	if ok {
		st = c.st
	}
	exec := f.Exec
	f.mu.Unlock()
	if !ok || st.State != ContainerRunning {
		return nil, fmt.Errorf("exec in container %s: %w", id, ErrNotRunning)
	}
	if exec != nil {
		return exec(st, cmd), nil
	}
	return &ExecResult{}, nil
}

// PullImage implements Runtime: every pull succeeds.
func (f *Fake) PullImage(_ context.Context, ref string, _ *PullAuth) (string, error) {
	name, err := NormalizeImage(ref)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images[name] = true
	f.record("PullImage %s", name)
	return "sha256:fake", nil
}

// ImageStatus implements Runtime.
func (f *Fake) ImageStatus(_ context.Context, ref string) (*Image, error) {
	name, err := NormalizeImage(ref)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[name] {
		return nil, nil
	}
	return &Image{Ref: name, Digest: "sha256:fake"}, nil
}

var _ Runtime = (*Fake)(nil)
