package kubelet

// A container's start: its image (pull policy, back-off), its configuration (mounts,
// env, termination log), create and start in the runtime, postStart. The pod worker's
// Start steps (apply.go) come here.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// errImageNeverPull is a missing image under imagePullPolicy Never: not a pull failure, so
// it is reported as ErrImageNeverPull (as upstream) rather than ErrImagePull/ImagePullBackOff.
type errImageNeverPull struct {
	image  string
	policy v1.PullPolicy // the pod's (defaulted) policy
	local  bool          // a wasmkube.local/ image, which exists only by import
}

func (e *errImageNeverPull) Error() string {
	if e.local && e.policy != v1.PullNever {
		return fmt.Sprintf("Container image %q is not present with pull policy of %s, and wasmkube.local/ images are never pulled: import it on the node (make images, or wasmkube image import)", e.image, e.policy)
	}
	return fmt.Sprintf("Container image %q is not present with pull policy of %s", e.image, e.policy)
}

// targetContainerID is the running container whose PID namespace ephemeral container name
// joins (its targetContainerName), "" when it names none; an error when the target does
// not run (the start is retried at the next sync).
func (w *podWorker) targetContainerID(ctx context.Context, pod *v1.Pod, name string) (string, error) {
	target := ""
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == name {
			target = ec.TargetContainerName
		}
	}
	if target == "" {
		return "", nil
	}
	cs, err := w.k.rt.ListContainers(ctx, string(pod.UID))
	if err != nil {
		return "", err
	}
	latest, _ := LatestByName(cs)
	if l := latest[target]; l != nil && l.State == runtime.ContainerRunning {
		return l.ID, nil
	}
	return "", fmt.Errorf("target container %q of ephemeral container %q is not running", target, name)
}

// ensureImage applies the pull policy. Images named wasmkube.local/... exist only by import
// (make images, `wasmkube image import`) and are never pulled.
func (w *podWorker) ensureImage(ctx context.Context, pod *v1.Pod, c *v1.Container) error {
	ref, err := runtime.NormalizeImage(c.Image)
	if err != nil {
		return err
	}
	policy := c.ImagePullPolicy
	if policy != v1.PullAlways && w.k.imageKnown(ref) {
		w.k.rec.event(pod, v1.EventTypeNormal, "Pulled", c.Name, "Container image %q already present on machine", c.Image)
		return nil
	}
	present, err := w.k.rt.ImageStatus(ctx, ref)
	if err != nil {
		return err
	}
	if policy == "" {
		policy = v1.PullIfNotPresent
	}
	podPolicy, local := policy, isLocalOnly(ref)
	if local {
		policy = v1.PullNever
	}
	switch {
	case policy == v1.PullNever && present == nil:
		return &errImageNeverPull{image: c.Image, policy: podPolicy, local: local}
	case policy == v1.PullAlways || present == nil:
		w.releaseSlot()
		w.k.rec.event(pod, v1.EventTypeNormal, "Pulling", c.Name, "Pulling image %q", c.Image)
		start := time.Now()
		auth, err := w.k.pullAuth(ctx, pod, ref)
		if err != nil {
			return err
		}
		if _, err := w.k.rt.PullImage(ctx, ref, auth); err != nil {
			return fmt.Errorf("pull %s: %w", c.Image, err)
		}
		w.k.rec.event(pod, v1.EventTypeNormal, "Pulled", c.Name, "Successfully pulled image %q in %s", c.Image, time.Since(start).Round(time.Millisecond))
		w.k.setImageKnown(ref)
	default:
		w.k.setImageKnown(ref)
		w.k.rec.event(pod, v1.EventTypeNormal, "Pulled", c.Name, "Container image %q already present on machine", c.Image)
	}
	return nil
}

func isLocalOnly(ref string) bool {
	return len(ref) > len("wasmkube.local/") && ref[:len("wasmkube.local/")] == "wasmkube.local/"
}

func (w *podWorker) startContainer(ctx context.Context, pod *v1.Pod, sb *runtime.Sandbox, c *v1.Container, field string, attempt int, volumes map[string]string) {
	w.mu.Lock()
	retryAt, failures, never := w.pullRetry[c.Name], w.pullFailures[c.Name], w.pullNever[c.Name]
	w.mu.Unlock()
	if time.Now().Before(retryAt) {
		if never != "" {
			w.setWaiting(c.Name, &Waiting{Reason: "ErrImageNeverPull", Message: never})
		} else {
			w.setWaiting(c.Name, &Waiting{Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.Image)})
		}
		return
	}
	if err := w.ensureImage(ctx, pod, c); err != nil {
		failures++
		var neverErr *errImageNeverPull
		isNever := errors.As(err, &neverErr)
		w.mu.Lock()
		// Policy Never is re-checked on the same back-off (the image may be imported meanwhile),
		// which also keeps its warning events from flooding.
		w.pullFailures[c.Name], w.pullRetry[c.Name] = failures, time.Now().Add(RestartDelay(failures))
		if isNever {
			w.pullNever[c.Name] = err.Error()
		} else {
			delete(w.pullNever, c.Name)
		}
		w.mu.Unlock()
		if isNever {
			w.setWaiting(c.Name, &Waiting{Reason: "ErrImageNeverPull", Message: err.Error()})
			w.k.rec.event(pod, v1.EventTypeWarning, "ErrImageNeverPull", c.Name, "%s", err.Error())
			return
		}
		w.setWaiting(c.Name, &Waiting{Reason: "ErrImagePull", Message: err.Error()})
		w.k.rec.event(pod, v1.EventTypeWarning, "Failed", c.Name, "Failed to pull image %q: %v", c.Image, err)
		return
	}
	w.mu.Lock()
	delete(w.pullFailures, c.Name)
	delete(w.pullRetry, c.Name)
	delete(w.pullNever, c.Name)
	w.mu.Unlock()
	cfg, err := w.containerConfig(ctx, pod, sb, c, field, attempt, volumes)
	if err != nil {
		w.setWaiting(c.Name, &Waiting{Reason: "CreateContainerConfigError", Message: err.Error()})
		w.k.rec.event(pod, v1.EventTypeWarning, "Failed", c.Name, "Error: %v", err)
		return
	}
	id, err := w.k.rt.CreateContainer(ctx, sb.ID, *cfg)
	if err != nil {
		if errors.Is(err, runtime.ErrNotFound) {
			w.k.forgetImage(cfg.Image)
		}
		w.setWaiting(c.Name, &Waiting{Reason: "CreateContainerError", Message: err.Error()})
		w.k.rec.event(pod, v1.EventTypeWarning, "Failed", c.Name, "Error: %v", err)
		return
	}
	w.k.rec.event(pod, v1.EventTypeNormal, "Created", c.Name, "Created container %s", c.Name)
	if err := w.k.rt.StartContainer(ctx, id); err != nil {
		w.setWaiting(c.Name, &Waiting{Reason: "RunContainerError", Message: err.Error()})
		w.k.rec.event(pod, v1.EventTypeWarning, "Failed", c.Name, "Error: %v", err)
		_ = w.k.rt.RemoveContainer(ctx, id)
		return
	}
	w.setWaiting(c.Name, nil)
	w.k.rec.event(pod, v1.EventTypeNormal, "Started", c.Name, "Started container %s", c.Name)
	if attempt >= 2 {
		w.pruneOldAttempts(ctx, c.Name, attempt)
	}
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		w.releaseSlot()
		t := probe.Target{Pod: pod, Container: c, ContainerID: id, PodIP: sb.IP}
		if err := w.k.postStart.PostStart(ctx, t, c.Lifecycle.PostStart); err != nil {
			w.k.rec.event(pod, v1.EventTypeWarning, "FailedPostStartHook", c.Name, "PostStartHook failed: %v", err)
			_ = w.k.rt.StopContainer(ctx, id, gracePeriod(pod))
		}
	}
}

// pruneOldAttempts keeps the newest attempt and the one before it (for logs --previous).
func (w *podWorker) pruneOldAttempts(ctx context.Context, name string, attempt int) {
	cs, err := w.k.rt.ListContainers(ctx, string(w.uid))
	if err != nil {
		return
	}
	for _, c := range cs {
		if c.Name == name && c.Attempt < attempt-1 {
			_ = w.k.rt.RemoveContainer(ctx, c.ID)
			_ = os.Remove(c.LogPath)
			_ = os.Remove(TerminationLogPath(w.k.opts.RootDir, string(w.uid), c.Name, c.Attempt))
		}
	}
}

func (w *podWorker) containerConfig(ctx context.Context, pod *v1.Pod, sb *runtime.Sandbox, c *v1.Container, field string, attempt int, volumes map[string]string) (*runtime.ContainerConfig, error) {
	mounts, err := ContainerMounts(pod, c, field, volumes)
	if err != nil {
		return nil, err
	}
	if c.TerminationMessagePath != "" {
		tl := TerminationLogPath(w.k.opts.RootDir, string(pod.UID), c.Name, attempt)
		if err := os.MkdirAll(filepath.Dir(tl), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(tl, nil, 0o666); err != nil {
			return nil, err
		}
		_ = os.Chmod(tl, 0o666) // writable whatever user the container runs as
		mounts = append(mounts, runtime.Mount{HostPath: tl, ContainerPath: c.TerminationMessagePath})
	}
	env, err := ContainerEnv(context.Background(), pod, c, field, sb.IP, w.k.opts.NodeIP, w.k.objects)
	if err != nil {
		return nil, err
	}
	env = withServiceEnv(w.k.serviceEnv(pod), env)
	ref, err := runtime.NormalizeImage(c.Image)
	if err != nil {
		return nil, err
	}
	target, err := w.targetContainerID(ctx, pod, c.Name)
	if err != nil {
		return nil, err
	}
	return &runtime.ContainerConfig{
		Name: c.Name, Attempt: attempt, Image: ref, Command: c.Command, Args: c.Args, Env: env,
		WorkingDir: c.WorkingDir, Mounts: mounts, Resources: ContainerResources(c), Security: ContainerSecurity(pod, c),
		LogPath: LogPath(w.k.opts.RootDir, string(pod.UID), c.Name, attempt),
		Stdin:   c.Stdin, StdinOnce: c.StdinOnce, TTY: c.TTY,
		TargetContainerID: target, HostPID: pod.Spec.HostPID, HostIPC: pod.Spec.HostIPC,
	}, nil
}
