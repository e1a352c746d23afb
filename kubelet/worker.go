package kubelet

import (
	"context"
	"maps"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

	// terminating is when the worker first saw the pod's deletion, terminatingFor (its
	// deletionTimestamp) or a later one that shortened it (owned by its goroutine): the
	// grace deadline is never later than a grace period after it.
	terminating    time.Time
	terminatingFor *metav1.Time
	// kill is the grace deadline of the kills under way and the cancel that ends them
	// early when a later deletion asks for a shorter grace period (under mu).
	kill struct {
		deadline, terminating time.Time
		cancel                context.CancelFunc
	}
	// preStopRan names the containers (runtime ids) whose preStop hook has run: a kill
	// restarted for a shorter grace period does not run it again (under mu).
	preStopRan map[string]bool
}

func newPodWorker(k *Kubelet, pod *v1.Pod) *podWorker {
	return &podWorker{k: k, uid: pod.UID, pod: pod, lastPod: pod, poke: make(chan struct{}, 1),
		probes: map[string]*containerProbes{}, waiting: map[string]Waiting{}, backoff: map[string]string{},
		pullFailures: map[string]int{}, pullRetry: map[string]time.Time{}, pullNever: map[string]string{},
		preStopRan: map[string]bool{}, releaseSlot: func() {}}
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
	if k := &w.kill; k.cancel != nil && pod != nil && pod.DeletionTimestamp != nil &&
		graceDeadline(pod, pod, k.terminating).Before(k.deadline) {
		// A second deletion with a shorter grace period: the kills start again with it.
		k.cancel()
		k.cancel = nil
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
		// Seen now: this deletion, or a later one that shortened the grace period.
		if w.terminating.IsZero() || (pod != nil && !pod.DeletionTimestamp.Equal(w.terminatingFor)) {
			w.terminating = time.Now()
			if pod != nil {
				w.terminatingFor = pod.DeletionTimestamp
			}
		}
	}
	obs, err := w.observe(ctx)
	if err != nil {
		if ctx.Err() == nil { // a cancelled context is the kubelet stopping, not a fault
			w.k.log.Error("observe pod", "pod", podKey(last), "err", err)
		}
		return 2 * time.Second, false
	}
	w.mu.Lock()
	preStopRan := maps.Clone(w.preStopRan)
	w.mu.Unlock()
	plan := planPod(planInput{pod: pod, last: last, sandboxes: obs.sandboxes, containers: obs.containers,
		unhealthy: w.unhealthy(), preStopRan: preStopRan, now: time.Now(), terminating: w.terminating})
	switch plan.mode {
	case modeTerminate:
		kctx, cancel := context.WithCancel(ctx)
		w.mu.Lock()
		w.kill.deadline, w.kill.terminating, w.kill.cancel = plan.deadline, w.terminating, cancel
		if cur := w.pod; cur != nil && cur.DeletionTimestamp != nil && graceDeadline(cur, cur, w.terminating).Before(plan.deadline) {
			cancel() // shortened since it was planned
		}
		w.mu.Unlock()
		requeue, ok := w.apply(ctx, kctx, pod, last, obs, plan)
		w.mu.Lock()
		w.kill.cancel = nil
		w.mu.Unlock()
		cancel()
		return requeue, ok
	case modeFinished:
		w.stopAllProbes()
		requeue, _ := w.apply(ctx, ctx, pod, last, obs, plan)
		return requeue, false
	}

	t0 := time.Now()
	requeue, _ := w.apply(ctx, ctx, pod, last, obs, plan)
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
