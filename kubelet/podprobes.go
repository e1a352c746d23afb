package kubelet

// A pod's probe loops: started for its running app containers, stopped with them;
// their results feed the status (ready, started) and the plan (unhealthy containers).

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

type containerProbes struct {
	cancel         context.CancelFunc
	hasReadiness   bool
	ready          bool
	hasStartup     bool
	started        bool
	livenessFailed bool
	startupFailed  bool
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

// unhealthy names the running containers whose probes want them killed, and why.
func (w *podWorker) unhealthy() map[string]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[string]string{}
	for id, p := range w.probes {
		switch {
		case p.livenessFailed:
			m[id] = "failed liveness probe"
		case p.startupFailed:
			m[id] = "failed startup probe"
		}
	}
	return m
}
