package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

const resyncPeriod = 10 * time.Second

// podWorker reconciles one pod: desired state from the API, actual state from the runtime.
// One goroutine per pod; everything it does for that pod is serial.
type podWorker struct {
	k   *Kubelet
	uid types.UID

	mu      sync.Mutex
	pod     *v1.Pod // latest from the API; nil once it is gone from the API
	lastPod *v1.Pod // last non-nil pod, for grace period and events after removal
	poke    chan struct{}

	// Owned by the worker goroutine, shared with probe goroutines under mu.
	probes  map[string]*containerProbes // runtime container id -> probes
	waiting map[string]Waiting
	// volumeWaiting is the waiting state the pod's volumes put every container in, until
	// they resolve (then those entries go, and others stay).
	volumeWaiting *Waiting
	backoff       map[string]string // container name -> "<id>" whose back-off was announced

	pullFailures map[string]int       // container name -> failed pulls in a row
	pullRetry    map[string]time.Time // container name -> no pull before
	pullNever    map[string]string    // container name -> message while its image is absent under policy Never

	// releaseSlot gives a held start slot back before work that may take long and is not
	// CPU (an image pull, a postStart hook), so other pods keep starting. Safe to call from
	// several goroutines and more than once; a no-op outside a start.
	releaseSlot func()
	written     *v1.PodStatus // the status this worker last wrote (under mu)

	// terminating is when the worker first saw the pod deleted (owned by its goroutine):
	// the grace deadline is never later than a grace period after it.
	terminating time.Time
}

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

type containerProbes struct {
	cancel         context.CancelFunc
	hasReadiness   bool
	ready          bool
	hasStartup     bool
	started        bool
	livenessFailed bool
	startupFailed  bool
}

func newPodWorker(k *Kubelet, pod *v1.Pod) *podWorker {
	return &podWorker{k: k, uid: pod.UID, pod: pod, lastPod: pod, poke: make(chan struct{}, 1),
		probes: map[string]*containerProbes{}, waiting: map[string]Waiting{}, backoff: map[string]string{},
		pullFailures: map[string]int{}, pullRetry: map[string]time.Time{}, pullNever: map[string]string{},
		releaseSlot: func() {}}
}

func (w *podWorker) update(pod *v1.Pod) {
	w.mu.Lock()
	// The worker's own status write coming back through the watch needs no sync; a status
	// someone else wrote does (the worker puts its own back).
	statusOnly := statusOnlyChange(w.pod, pod) && w.written != nil && apiequality.Semantic.DeepEqual(pod.Status, *w.written)
	w.pod = pod
	if pod != nil {
		w.lastPod = pod
	}
	w.mu.Unlock()
	if !statusOnly {
		w.wake()
	}
}

// statusOnlyChange reports whether the API's new version of a pod differs from the old one
// only in its status. A change of spec, labels, annotations, deletion timestamp or
// finalizers wakes the worker.
func statusOnlyChange(old, cur *v1.Pod) bool {
	if old == nil || cur == nil || !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec) {
		return false
	}
	om, cm := old.ObjectMeta, cur.ObjectMeta
	om.ResourceVersion, cm.ResourceVersion = "", ""
	om.ManagedFields, cm.ManagedFields = nil, nil
	return apiequality.Semantic.DeepEqual(om, cm)
}

func (w *podWorker) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *podWorker) current() (pod, last *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.lastPod
}

func (w *podWorker) run(ctx context.Context) {
	defer w.stopAllProbes()
	for {
		requeue, done := w.sync(ctx)
		if done || ctx.Err() != nil {
			return
		}
		if requeue <= 0 || requeue > resyncPeriod {
			requeue = resyncPeriod
		}
		t := time.NewTimer(requeue)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.poke:
			t.Stop()
		case <-t.C:
		}
	}
}

type observed struct {
	sandboxes  []runtime.Sandbox
	containers []runtime.ContainerStatus
}

func (w *podWorker) observe(ctx context.Context) (*observed, error) {
	sbs, cs, err := w.k.rt.ListPod(ctx, string(w.uid))
	if err != nil {
		return nil, err
	}
	return &observed{sandboxes: sbs, containers: cs}, nil
}

// sync does one pass: observe the pod in the runtime, plan (planPod), apply the plan,
// then start or stop probes and write the status. It returns when to run again and
// whether the worker is done (the pod is terminated and deleted).
func (w *podWorker) sync(ctx context.Context) (time.Duration, bool) {
	pod, last := w.current()
	if pod == nil || pod.DeletionTimestamp != nil {
		w.stopAllProbes()
		if w.terminating.IsZero() {
			w.terminating = time.Now()
		}
	}
	obs, err := w.observe(ctx)
	if err != nil {
		if ctx.Err() == nil { // a cancelled context is the kubelet stopping, not a fault
			w.k.log.Error("observe pod", "pod", podKey(last), "err", err)
		}
		return 2 * time.Second, false
	}
	plan := planPod(planInput{pod: pod, last: last, sandboxes: obs.sandboxes, containers: obs.containers,
		unhealthy: w.unhealthy(), now: time.Now(), terminating: w.terminating})
	switch plan.mode {
	case modeTerminate:
		requeue, ok := w.apply(ctx, pod, last, obs, plan)
		return requeue, ok
	case modeFinished:
		w.stopAllProbes()
		requeue, _ := w.apply(ctx, pod, last, obs, plan)
		return requeue, false
	}

	t0 := time.Now()
	requeue, _ := w.apply(ctx, pod, last, obs, plan)
	t1 := time.Now()

	obs, err = w.observe(ctx)
	if err != nil {
		if ctx.Err() == nil { // a cancelled context is the kubelet stopping, not a fault
			w.k.log.Error("observe pod", "pod", podKey(pod), "err", err)
		}
		return 2 * time.Second, false
	}
	w.syncProbes(ctx, pod, obs)
	t2 := time.Now()
	err = w.writeStatus(ctx, pod, obs)
	w.k.log.Debug("pod synced", "pod", podKey(pod), "apply", t1.Sub(t0), "observe", t2.Sub(t1), "status", time.Since(t2))
	if err != nil && ctx.Err() == nil {
		w.k.log.Warn("write pod status", "pod", podKey(pod), "err", err)
		if requeue == 0 || requeue > time.Second {
			requeue = time.Second
		}
	}
	return requeue, false
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

func (w *podWorker) setWaiting(name string, wt *Waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt == nil {
		delete(w.waiting, name)
	} else {
		w.waiting[name] = *wt
	}
}

func (w *podWorker) setWaitingAll(pod *v1.Pod, wt Waiting) {
	for _, c := range pod.Spec.InitContainers {
		w.setWaiting(c.Name, &wt)
	}
	for _, c := range pod.Spec.Containers {
		w.setWaiting(c.Name, &wt)
	}
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

func (w *podWorker) writeStatus(ctx context.Context, pod *v1.Pod, obs *observed) error {
	w.mu.Lock()
	in := StatusInput{Pod: pod, Sandbox: readySandbox(obs.sandboxes), Containers: obs.containers, HostIP: w.k.opts.NodeIP, Now: time.Now(),
		Ready: map[string]bool{}, Started: map[string]bool{}, Waiting: map[string]Waiting{}}
	for id, p := range w.probes {
		if p.hasReadiness {
			in.Ready[id] = p.ready
		}
		if p.hasStartup {
			in.Started[id] = p.started
		}
	}
	for n, wt := range w.waiting {
		in.Waiting[n] = wt
	}
	w.mu.Unlock()
	// A container that runs again is no longer held back.
	latest, _ := LatestByName(obs.containers)
	for n := range in.Waiting {
		if l := latest[n]; l != nil && l.State == runtime.ContainerRunning {
			delete(in.Waiting, n)
			w.setWaiting(n, nil)
		}
	}
	in.Messages = map[string]string{}
	for i := range obs.containers {
		if c := &obs.containers[i]; exited(c) {
			in.Messages[c.ID] = TerminationMessage(findContainer(pod, c.Name),
				TerminationLogPath(w.k.opts.RootDir, string(pod.UID), c.Name, c.Attempt), c.LogPath, c.ExitCode)
		}
	}
	status := ComputeStatus(in)
	if apiequality.Semantic.DeepEqual(status, pod.Status) {
		return nil
	}
	np := pod.DeepCopy()
	np.Status = status
	updated, err := w.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, np, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		fresh, gerr := w.k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr != nil {
			return gerr
		}
		if fresh.UID != pod.UID {
			return nil
		}
		in.Pod = fresh
		fresh = fresh.DeepCopy()
		fresh.Status = ComputeStatus(in)
		updated, err = w.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	w.mu.Lock()
	if w.pod != nil && w.pod.DeletionTimestamp == nil && newerRV(updated.ResourceVersion, w.pod.ResourceVersion) {
		w.pod, w.lastPod = updated, updated
	}
	w.written = &updated.Status
	w.mu.Unlock()
	return nil
}

// newerRV compares resourceVersions as the numbers our API server issues (etcd revisions).
func newerRV(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}

// syncProbes starts probe loops for running containers and stops those of exited ones.
func (w *podWorker) syncProbes(ctx context.Context, pod *v1.Pod, obs *observed) {
	running := map[string]*runtime.ContainerStatus{}
	for i := range obs.containers {
		if c := &obs.containers[i]; c.State == runtime.ContainerRunning {
			running[c.ID] = c
		}
	}
	w.mu.Lock()
	var stale []string
	for id := range w.probes {
		if running[id] == nil {
			stale = append(stale, id)
		}
	}
	w.mu.Unlock()
	for _, id := range stale {
		w.stopProbes(id)
	}
	sb := readySandbox(obs.sandboxes)
	if sb == nil {
		return
	}
	ids := make([]string, 0, len(running))
	for id := range running {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		st := running[id]
		var spec *v1.Container
		for i := range pod.Spec.Containers {
			if pod.Spec.Containers[i].Name == st.Name {
				spec = &pod.Spec.Containers[i]
			}
		}
		if spec == nil {
			continue // init containers are not probed
		}
		w.mu.Lock()
		_, exists := w.probes[id]
		w.mu.Unlock()
		if exists {
			continue
		}
		w.startProbes(ctx, pod, spec, st, sb.IP)
	}
}

func (w *podWorker) startProbes(ctx context.Context, pod *v1.Pod, c *v1.Container, st *runtime.ContainerStatus, podIP string) {
	pctx, cancel := context.WithCancel(ctx)
	cp := &containerProbes{cancel: cancel, hasReadiness: c.ReadinessProbe != nil, hasStartup: c.StartupProbe != nil}
	w.mu.Lock()
	w.probes[st.ID] = cp
	w.mu.Unlock()
	t := probe.Target{Pod: pod, Container: c, ContainerID: st.ID, PodIP: podIP}
	startedAt := st.StartedAt
	if startedAt.IsZero() {
		startedAt = time.Now()
	}
	w.k.describeHooks(ctx, pod, c)
	target := func(kind probe.Kind) probe.Target { t := t; t.Kind = kind; return t }
	// onResult counts every probe (prober_probe_total) and reports failures as Unhealthy.
	onResult := func(kind probe.Kind) func(probe.Result, string) {
		counter := func(r probe.Result) prometheus.Counter {
			return w.k.metrics.probes.WithLabelValues(string(kind), probeResult(r), c.Name, pod.Name, pod.Namespace)
		}
		return func(r probe.Result, msg string) {
			counter(r).Inc()
			if r == probe.Failure {
				w.k.rec.event(pod, v1.EventTypeWarning, "Unhealthy", c.Name, "%s probe failed: %s", kind, msg)
			}
		}
	}
	set := func(f func()) {
		w.mu.Lock()
		f()
		w.mu.Unlock()
		w.wake()
	}
	runMain := func() {
		if c.LivenessProbe != nil {
			tr := probe.NewTracker(c.LivenessProbe, probe.Success)
			go probe.Loop(pctx, w.k.prober, target(probe.Liveness), c.LivenessProbe, startedAt, tr, onResult(probe.Liveness), func(r probe.Result) {
				if r == probe.Failure {
					set(func() { cp.livenessFailed = true })
				}
			})
		}
		if c.ReadinessProbe != nil {
			tr := probe.NewTracker(c.ReadinessProbe, probe.Failure)
			go probe.Loop(pctx, w.k.prober, target(probe.Readiness), c.ReadinessProbe, startedAt, tr, onResult(probe.Readiness), func(r probe.Result) {
				set(func() { cp.ready = r == probe.Success })
			})
		}
	}
	if c.StartupProbe == nil {
		runMain()
		return
	}
	sctx, scancel := context.WithCancel(pctx)
	tr := probe.NewTracker(c.StartupProbe, probe.Failure)
	go probe.Loop(sctx, w.k.prober, target(probe.Startup), c.StartupProbe, startedAt, tr, onResult(probe.Startup), func(r probe.Result) {
		scancel()
		if r == probe.Success {
			set(func() { cp.started = true })
			runMain()
		} else {
			set(func() { cp.startupFailed = true })
		}
	})
}

func (w *podWorker) stopProbes(id string) {
	w.mu.Lock()
	p := w.probes[id]
	delete(w.probes, id)
	w.mu.Unlock()
	if p != nil {
		p.cancel()
	}
}

func (w *podWorker) stopAllProbes() {
	w.mu.Lock()
	ps := w.probes
	w.probes = map[string]*containerProbes{}
	w.mu.Unlock()
	for _, p := range ps {
		p.cancel()
	}
}

func podRef(p *v1.Pod) runtime.PodRef {
	return runtime.PodRef{UID: string(p.UID), Namespace: p.Namespace, Name: p.Name}
}

func podKey(p *v1.Pod) string {
	if p == nil {
		return "?"
	}
	return p.Namespace + "/" + p.Name
}

func podHostname(p *v1.Pod) string {
	h := p.Name
	if p.Spec.Hostname != "" {
		h = p.Spec.Hostname
	}
	if len(h) > 63 {
		h = h[:63]
	}
	return h
}
