package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// applier carries out one plan (plan.go) for a pod: the thin shell between the pure
// decisions and the runtime, the API and the worker's own records (waiting reasons,
// events). It holds what earlier steps produced for later ones: the sandbox, the volumes.
type applier struct {
	w   *podWorker
	pod *v1.Pod // the pod as the API has it (nil once gone)
	src *v1.Pod // the pod the steps act for: pod, or the last version seen
	obs *observed

	sb      *runtime.Sandbox
	volumes map[string]string
	release func() // gives back the start slot a RunSandbox step took
	// kill is the context of a terminating pod's kills: cancelled when a later deletion
	// shortens the grace period, which restarts them (errKillRestarted).
	kill context.Context
}

// errKillRestarted ends a pass whose kills were cut short by a deletion with a shorter grace
// period: the next pass, at once, kills by the new deadline.
var errKillRestarted = errors.New("kill restarted for a shorter grace period")

// apply carries out plan's steps in order, the steps of one group together. A failed step
// with a retry delay ends the pass (what is left waits for the next one): apply then
// returns that delay and false. Otherwise it returns the plan's requeue and true. Kill
// steps run under kill (ctx, or a context a shorter grace period cancels).
func (w *podWorker) apply(ctx, kill context.Context, pod, last *v1.Pod, obs *observed, plan podPlan) (time.Duration, bool) {
	a := &applier{w: w, pod: pod, src: pod, obs: obs, sb: plan.sandbox, release: func() {}, kill: kill}
	if a.src == nil {
		a.src = last
	}
	defer func() { a.release() }()
	steps := plan.steps
	for i := 0; i < len(steps); {
		j := i + 1
		for steps[i].group > 0 && j < len(steps) && steps[j].group == steps[i].group {
			j++
		}
		errs := make([]error, j-i)
		if j-i == 1 {
			errs[0] = a.do(ctx, &steps[i])
		} else {
			var wg sync.WaitGroup
			for k := i; k < j; k++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[k-i] = a.do(ctx, &steps[k])
				}()
			}
			wg.Wait()
		}
		var retry time.Duration
		for k, err := range errs {
			s := &steps[i+k]
			if err == nil {
				continue
			}
			if ctx.Err() != nil { // the kubelet stopping, not a fault
				return 0, false
			}
			if errors.Is(err, errKillRestarted) {
				return time.Millisecond, false // plan again at once, with the shorter grace period
			}
			w.k.log.Warn("pod step failed", "pod", podKey(a.src), "step", s.kind.String(), "container", s.name, "err", err)
			if s.retry > 0 && (retry == 0 || s.retry < retry) {
				retry = s.retry
			}
		}
		if retry > 0 {
			return retry, false
		}
		i = j
	}
	return plan.requeue, true
}

// do carries out one step. Failures that the user sees as a waiting reason or an event
// are recorded here; the error is for apply's retry.
func (a *applier) do(ctx context.Context, s *step) error {
	t0 := time.Now()
	err := a.run(ctx, s)
	if a.w.k.log.Enabled(ctx, slog.LevelDebug) && s.kind != stepStart {
		a.w.k.log.Debug("pod step", "pod", podKey(a.src), "step", s.kind.String(), "container", s.name, "took", time.Since(t0), "err", err)
	}
	return err
}

func (a *applier) run(ctx context.Context, s *step) error {
	w, pod := a.w, a.src
	switch s.kind {
	case stepWritePending:
		// Tell the user right away that the pod is being set up.
		_ = w.writeStatus(ctx, pod, a.obs)
	case stepStopSandbox:
		return w.k.rt.StopPodSandbox(ctx, s.sandbox)
	case stepRunSandbox:
		return a.runSandbox(ctx)
	case stepVolumes:
		return a.resolveVolumes(ctx)
	case stepStart:
		if s.replace != "" { // created, never started
			_ = w.k.rt.RemoveContainer(ctx, s.replace)
		}
		w.startContainer(ctx, pod, a.sb, s.container, s.field, s.attempt, a.volumes)
	case stepBackOff:
		w.announceBackOff(pod, s.name, s.observed, s.delay)
	case stepKill:
		if s.why != "" {
			w.k.rec.event(pod, v1.EventTypeNormal, "Killing", s.name, "Container %s %s, will be restarted", s.name, s.why)
		} else {
			w.k.rec.event(pod, v1.EventTypeNormal, "Killing", s.name, "Stopping container %s", s.name)
		}
		w.killContainer(a.kill, pod, s.container, s.observed, s.deadline, s.preStop)
		if a.kill.Err() != nil && ctx.Err() == nil {
			return errKillRestarted
		}
	case stepWriteStatus:
		obs, err := w.observe(ctx)
		if err != nil {
			return err
		}
		return w.writeStatus(ctx, pod, obs)
	case stepRemoveSandbox:
		return w.k.rt.RemovePodSandbox(ctx, s.sandbox)
	case stepRemoveContainer:
		return w.k.rt.RemoveContainer(ctx, s.observed.ID)
	case stepRemovePodDir:
		return RemovePodDir(w.k.opts.RootDir, string(w.uid))
	case stepFinalDelete:
		zero := int64(0)
		uid := a.pod.UID
		err := w.k.client.CoreV1().Pods(a.pod.Namespace).Delete(ctx, a.pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("final delete: %w", err)
		}
	default:
		return fmt.Errorf("unknown step %d", s.kind)
	}
	return nil
}

// runSandbox makes the pod's sandbox. Pods starting compete for the same CPUs (runc,
// shims, CNI plugins); admitting a few at a time, from the sandbox to their first
// containers, gets each pod to Running sooner than starting all at once, where all finish
// last. The slot is held until the pass ends, or given back earlier before work that may
// take long and is not CPU (w.releaseSlot).
func (a *applier) runSandbox(ctx context.Context) error {
	w, pod := a.w, a.src
	select {
	case w.k.startSlots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	var once sync.Once
	release := func() { once.Do(func() { <-w.k.startSlots }) }
	w.releaseSlot = release
	a.release = func() { release(); w.releaseSlot = func() {} }
	t0 := time.Now()
	sb, err := w.k.rt.RunPodSandbox(ctx, runtime.SandboxConfig{
		Pod: podRef(pod), Hostname: podHostname(pod), HostDomain: w.k.podDomain(pod), Image: w.k.opts.PauseImage,
		HostNetwork: pod.Spec.HostNetwork, HostIP: w.k.opts.NodeIP, ResolvConf: w.k.resolvConf(pod),
	})
	w.k.log.Debug("sandbox created", "pod", podKey(pod), "took", time.Since(t0), "err", err)
	if err != nil {
		hint := ""
		var ne *runtime.NetworkError
		switch {
		case errors.As(err, &ne):
			hint = " (the pod network could not be set up: see the kubelet's log and its CNI plugins)"
		case errors.Is(err, runtime.ErrNotFound):
			hint = " (build the pause image with `make images`; the kubelet imports bin/images at start)"
		}
		w.k.rec.event(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "", "Failed to create pod sandbox: %v%s", err, hint)
		return err
	}
	a.sb = sb
	return nil
}

// resolveVolumes writes the pod's volumes and finds their host paths. While they do not
// resolve, every container waits in CreateContainerConfigError with the reason; once they
// do, that waiting state goes (a container's own stays).
func (a *applier) resolveVolumes(ctx context.Context) error {
	w, pod := a.w, a.src
	volumes, unsupported, err := VolumePaths(ctx, pod, w.k.opts.RootDir, w.k.objects, a.sb.IP, w.k.opts.NodeIP)
	if err != nil {
		wt := Waiting{Reason: "CreateContainerConfigError", Message: err.Error()}
		w.setWaitingAll(pod, wt)
		w.mu.Lock()
		w.volumeWaiting = &wt
		w.mu.Unlock()
		w.k.rec.event(pod, v1.EventTypeWarning, "FailedMount", "", "%v", err)
		return err
	}
	w.mu.Lock()
	if vw := w.volumeWaiting; vw != nil {
		for n, wt := range w.waiting {
			if wt == *vw {
				delete(w.waiting, n)
			}
		}
		w.volumeWaiting = nil
	}
	w.mu.Unlock()
	for _, name := range unsupported {
		w.k.warnOnce(pod, "UnsupportedVolume", fmt.Sprintf("volume %q: wasmkube's kubelet cannot fill this volume type (or projected source); it is mounted empty", name))
	}
	a.volumes = volumes
	return nil
}

// announceBackOff records that container name waits out its restart back-off (the
// CrashLoopBackOff waiting state), with a BackOff event once per exited container.
func (w *podWorker) announceBackOff(pod *v1.Pod, name string, l *runtime.ContainerStatus, delay time.Duration) {
	w.mu.Lock()
	w.waiting[name] = Waiting{Reason: "CrashLoopBackOff", Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, name, pod.Name, pod.Namespace, pod.UID)}
	announced := w.backoff[name] == l.ID
	w.backoff[name] = l.ID
	w.mu.Unlock()
	if !announced {
		w.k.rec.event(pod, v1.EventTypeWarning, "BackOff", name, "Back-off restarting failed container %s in pod %s_%s(%s)", name, pod.Name, pod.Namespace, pod.UID)
	}
}

// killContainer stops a running container by deadline: its preStop hook (when preStop)
// runs with deadline as its context's and is cancelled there, SIGTERM then waits for
// what is left (nothing, when the hook took it all), and SIGKILL goes at the deadline.
func (w *podWorker) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtime.ContainerStatus, deadline time.Time, preStop bool) {
	if ctx.Err() != nil {
		return // restarted (a shorter grace period) before it began: nothing ran
	}
	w.stopProbes(st.ID)
	if preStop && c != nil {
		w.mu.Lock()
		w.preStopRan[st.ID] = true
		w.mu.Unlock()
		hctx, cancel := context.WithDeadline(ctx, deadline)
		t := probe.Target{Pod: pod, Container: c, ContainerID: st.ID, PodIP: pod.Status.PodIP}
		t0 := time.Now()
		err := w.k.preStop.PreStop(hctx, t, c.Lifecycle.PreStop)
		cancel()
		w.k.log.Debug("preStop done", "pod", podKey(pod), "container", st.Name, "took", time.Since(t0), "left", time.Until(deadline), "err", err)
		if err != nil && ctx.Err() == nil { // not the kubelet stopping, nor a kill restarted
			w.k.rec.event(pod, v1.EventTypeWarning, "FailedPreStopHook", c.Name, "PreStopHook failed: %v", err)
		}
	}
	left := max(time.Until(deadline), 0)
	t0 := time.Now()
	if err := w.k.rt.StopContainer(ctx, st.ID, left); err != nil && ctx.Err() == nil {
		w.k.log.Warn("stop container", "pod", podKey(pod), "container", st.Name, "err", err)
	}
	w.k.log.Debug("container stopped", "pod", podKey(pod), "container", st.Name, "grace left", left, "took", time.Since(t0), "past deadline", time.Since(deadline))
}
