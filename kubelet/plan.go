package kubelet

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// The pod worker decides and acts in two halves, as the controllers do (core/controller/job's
// Plan): planPod is a pure function of the pod as the API has it, the pod as the runtime
// has it, what the probes found and the time, and returns the steps the pod needs; the
// worker's apply (apply.go) carries them out against the runtime and the API. A new kind of
// work for a pod (a network backend's per-pod step, a volume that must be attached) is one
// more stepKind, planned here and applied there.

// planMode is what a pass does with the pod.
type planMode int

const (
	// modeRun: the pod should run: sandbox, volumes, ephemeral, init and app containers.
	modeRun planMode = iota + 1
	// modeFinished: the pod succeeded or failed; its sandbox stops (the IP is released),
	// its containers stay for logs until the pod is deleted.
	modeFinished
	// modeTerminate: the pod is being deleted, or is gone from the API: its containers are
	// killed (preStop, SIGTERM, SIGKILL at the grace deadline), everything of it removed,
	// and its deletion completed.
	modeTerminate
)

// stepKind is one thing done for a pod.
type stepKind int

const (
	stepWritePending    stepKind = iota + 1 // tell the API at once that the pod is being set up
	stepStopSandbox                         // stop a sandbox (containers, pause, network)
	stepRunSandbox                          // make the pod's sandbox: namespace, network, pause
	stepVolumes                             // resolve and write the pod's volumes
	stepStart                               // start a container (replacing one never started)
	stepBackOff                             // a container waits out its restart back-off
	stepKill                                // kill a running container: preStop, SIGTERM, SIGKILL
	stepWriteStatus                         // write the pod's status as the runtime has it now
	stepRemoveSandbox                       // remove a sandbox and its containers
	stepRemoveContainer                     // remove a container (of a sandbox that is gone)
	stepRemovePodDir                        // remove the pod's directory (volumes, logs)
	stepFinalDelete                         // complete the deletion in the API (grace 0, uid precondition)
)

var stepNames = map[stepKind]string{
	stepWritePending: "WritePending", stepStopSandbox: "StopSandbox", stepRunSandbox: "RunSandbox",
	stepVolumes: "Volumes", stepStart: "Start", stepBackOff: "BackOff", stepKill: "Kill",
	stepWriteStatus: "WriteStatus", stepRemoveSandbox: "RemoveSandbox", stepRemoveContainer: "RemoveContainer",
	stepRemovePodDir: "RemovePodDir", stepFinalDelete: "FinalDelete",
}

func (k stepKind) String() string { return stepNames[k] }

// step is one step of a plan; which fields matter depends on kind.
type step struct {
	kind stepKind
	// sandbox is the sandbox a Stop/RemoveSandbox step acts on.
	sandbox string
	// name is the container's name (Start, BackOff, Kill); container its spec (nil for a
	// container the spec no longer names), field its path in the spec for errors.
	name      string
	container *v1.Container
	field     string
	// attempt is a Start's attempt number (its restart count); replace the id of a
	// container created but never started, removed first.
	attempt int
	replace string
	// observed is the container as the runtime reported it (BackOff, Kill, RemoveContainer).
	observed *runtime.ContainerStatus
	// delay is a BackOff's whole restart delay (the message says it).
	delay time.Duration
	// deadline is when a Kill's container gets SIGKILL: its preStop hook is cancelled at
	// it and SIGTERM waits for what is left of it. preStop: run the hook first. why: the
	// reason of a kill that restarts the container ("failed liveness probe"); empty when
	// the pod terminates.
	deadline time.Time
	preStop  bool
	why      string
	// retry > 0: if the step fails, the steps after it are skipped and the pod is looked
	// at again after retry. 0: a failure is logged and the plan goes on.
	retry time.Duration
	// group > 0 runs the step concurrently with its neighbours of the same group; the
	// plan goes on once all of them are done.
	group int
}

// podPlan is what one pass does for a pod.
type podPlan struct {
	mode  planMode
	steps []step
	// sandbox is the pod's ready sandbox, which container steps use; nil when a
	// RunSandbox step makes one.
	sandbox *runtime.Sandbox
	// requeue is when to look again if every step is done (0: at the resync period).
	requeue time.Duration
	// deadline is a terminating pod's grace deadline (graceDeadline).
	deadline time.Time
}

func (p *podPlan) add(s step) { p.steps = append(p.steps, s) }

// later asks for the next pass after d at the latest.
func (p *podPlan) later(d time.Duration) {
	if d > 0 && (p.requeue == 0 || d < p.requeue) {
		p.requeue = d
	}
}

// planInput is everything planPod decides from.
type planInput struct {
	pod  *v1.Pod // as the API has it; nil once it is gone from the API
	last *v1.Pod // the last version seen (a pod gone from the API is stopped as it was)

	sandboxes  []runtime.Sandbox
	containers []runtime.ContainerStatus
	// unhealthy names the running containers (by runtime id) that their probes want
	// killed, and why ("failed liveness probe").
	unhealthy map[string]string
	// preStopRan names the containers (by runtime id) whose preStop hook has run: a kill
	// restarted for a shorter grace period does not run it again.
	preStopRan map[string]bool

	now time.Time
	// terminating is when the worker first saw the pod deleted (zero before): the grace
	// deadline never moves later than a whole grace period after it.
	terminating time.Time
}

// Retry delays after failed steps, and how soon a killed container is looked at again.
const (
	sandboxRetry   = 5 * time.Second
	volumesRetry   = 10 * time.Second
	teardownRetry  = 2 * time.Second
	afterKillCheck = 100 * time.Millisecond
)

// planPod decides one pass over a pod. It is pure: no I/O, no clock but in.now.
func planPod(in planInput) podPlan {
	switch {
	case in.pod == nil || in.pod.DeletionTimestamp != nil:
		return planTerminate(in)
	case isTerminal(in.pod):
		p := podPlan{mode: modeFinished}
		for _, sb := range in.sandboxes {
			if sb.State == runtime.SandboxReady {
				p.add(step{kind: stepStopSandbox, sandbox: sb.ID, retry: teardownRetry})
			}
		}
		return p
	}
	return planRun(in)
}

func isTerminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// readySandbox is the newest sandbox whose pause runs, or nil.
func readySandbox(sbs []runtime.Sandbox) *runtime.Sandbox {
	var best *runtime.Sandbox
	for i := range sbs {
		sb := &sbs[i]
		if sb.State == runtime.SandboxReady && (best == nil || sb.CreatedAt.After(best.CreatedAt)) {
			best = sb
		}
	}
	return best
}

// planRun: a sandbox (after releasing dead ones), the volumes, then the ephemeral
// containers that never ran, the init containers one at a time in order, and the app
// containers together, each started, restarted after its back-off, or killed when its
// probes say so.
func planRun(in planInput) podPlan {
	pod := in.pod
	p := podPlan{mode: modeRun, sandbox: readySandbox(in.sandboxes)}
	if p.sandbox == nil {
		if pod.Status.Phase == "" {
			p.add(step{kind: stepWritePending})
		}
		for _, old := range in.sandboxes { // a dead sandbox: release its network first
			p.add(step{kind: stepStopSandbox, sandbox: old.ID})
		}
		p.add(step{kind: stepRunSandbox, retry: sandboxRetry})
	}
	p.add(step{kind: stepVolumes, retry: volumesRetry})
	latest, _ := LatestByName(in.containers)

	// Ephemeral containers: started once, never restarted (a start that left nothing
	// behind is retried, as the pod's containers are).
	for i := range pod.Spec.EphemeralContainers {
		ec := &pod.Spec.EphemeralContainers[i]
		s := step{kind: stepStart, name: ec.Name, container: (*v1.Container)(&ec.EphemeralContainerCommon), field: fmt.Sprintf("spec.ephemeralContainers[%d]", i)}
		switch l := latest[ec.Name]; {
		case l == nil:
		case l.State == runtime.ContainerCreated:
			s.replace = l.ID
		default:
			continue // running or exited
		}
		p.add(s)
	}

	// Init containers, one at a time, in order.
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		start := step{kind: stepStart, name: c.Name, container: c, field: fmt.Sprintf("spec.initContainers[%d]", i)}
		l := latest[c.Name]
		switch {
		case l == nil:
			p.add(start)
			return p
		case l.State == runtime.ContainerRunning:
			return p
		case l.State == runtime.ContainerCreated:
			start.replace, start.attempt = l.ID, l.Attempt
			p.add(start)
			return p
		case l.ExitCode == 0:
			continue
		default:
			if !ShouldRestart(pod.Spec.RestartPolicy, l.ExitCode) {
				return p // the pod has failed; ComputeStatus says so
			}
			if delay, left := backoffLeft(l, in.now); left > 0 {
				p.add(step{kind: stepBackOff, name: c.Name, observed: l, delay: delay})
				p.later(left)
				return p
			}
			start.attempt = l.Attempt + 1
			p.add(start)
			return p
		}
	}

	// App containers, together.
	const apps = 1
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		start := step{kind: stepStart, name: c.Name, container: c, field: fmt.Sprintf("spec.containers[%d]", i), group: apps}
		switch l := latest[c.Name]; {
		case l == nil:
		case l.State == runtime.ContainerCreated:
			start.replace, start.attempt = l.ID, l.Attempt
		case l.State == runtime.ContainerRunning:
			if why := in.unhealthy[l.ID]; why != "" {
				p.add(step{kind: stepKill, name: c.Name, container: c, observed: l, why: why, group: apps,
					deadline: in.now.Add(gracePeriod(pod)), preStop: c.Lifecycle != nil && c.Lifecycle.PreStop != nil})
				p.later(afterKillCheck)
			}
			continue
		default: // exited
			if !ShouldRestart(pod.Spec.RestartPolicy, l.ExitCode) {
				continue
			}
			if delay, left := backoffLeft(l, in.now); left > 0 {
				p.add(step{kind: stepBackOff, name: c.Name, observed: l, delay: delay})
				p.later(left)
				continue
			}
			start.attempt = l.Attempt + 1
		}
		p.add(start)
	}
	return p
}

// backoffLeft is container l's restart delay and how much of it is left at now.
func backoffLeft(l *runtime.ContainerStatus, now time.Time) (delay, left time.Duration) {
	delay = RestartDelay(l.Attempt)
	if l.FinishedAt.IsZero() {
		return delay, 0
	}
	return delay, max(l.FinishedAt.Add(delay).Sub(now), 0)
}

// planTerminate: every running container is killed at once, each by the one grace
// deadline; then the status (the containers' exits) is written, the sandboxes are stopped
// (pause, CNI DEL: the IP is free, the namespace gone), the pod's directory is removed and
// the deletion is completed in the API. The stopped containers and sandboxes, and their
// snapshots, are removed after that, as upstream's kubelet leaves them to its garbage
// collection: they hold nothing of the pod's any more, and on a loaded machine their
// removal took most of the time between the kill and the pod's disappearance.
func planTerminate(in planInput) podPlan {
	p := podPlan{mode: modeTerminate}
	src := in.pod
	if src == nil {
		src = in.last
	}
	deadline := graceDeadline(in.pod, src, in.terminating)
	p.deadline = deadline
	const kills, stops, removals = 1, 2, 3 // concurrent groups
	killed := false
	for i := range in.containers {
		st := &in.containers[i]
		if st.State != runtime.ContainerRunning {
			continue
		}
		c := findContainer(src, st.Name)
		p.add(step{kind: stepKill, name: st.Name, container: c, observed: st, deadline: deadline, group: kills,
			preStop: c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && !in.preStopRan[st.ID]})
		killed = true
	}
	if killed && in.pod != nil {
		// Before the sandboxes go, with what the status is read from.
		p.add(step{kind: stepWriteStatus})
	}
	for _, sb := range in.sandboxes {
		p.add(step{kind: stepStopSandbox, sandbox: sb.ID, retry: teardownRetry, group: stops})
	}
	p.add(step{kind: stepRemovePodDir, retry: teardownRetry})
	if in.pod != nil {
		p.add(step{kind: stepFinalDelete, retry: teardownRetry})
	}
	for _, sb := range in.sandboxes {
		p.add(step{kind: stepRemoveSandbox, sandbox: sb.ID, retry: teardownRetry, group: removals})
	}
	for i := range in.containers {
		p.add(step{kind: stepRemoveContainer, name: in.containers[i].Name, observed: &in.containers[i], retry: teardownRetry})
	}
	return p
}

// graceDeadline is when a terminating pod's containers get SIGKILL: one deadline for the
// preStop hooks (cancelled at it), SIGTERM (which waits only for what is left of it) and
// SIGKILL. It is the delete request's time plus the grace period (at least 2 s, as
// upstream's kubelet gives). The API server sets deletionTimestamp to that instant
// truncated to the second, so the deadline is deletionTimestamp (less the requested grace,
// plus the effective one) plus one second: never before the grace period is over, at most a
// second after. It is never later than a whole grace period after the worker first saw
// the deletion (terminating), which bounds a kubelet clock behind the server's. A pod gone
// from the API without a deletion seen (pod nil) gets a whole grace period from then.
func graceDeadline(pod, src *v1.Pod, terminating time.Time) time.Time {
	grace := gracePeriod(src)
	deadline := terminating.Add(grace)
	if pod != nil && pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		requested := pod.DeletionTimestamp.Add(-time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if d := requested.Add(grace + time.Second); d.Before(deadline) {
			deadline = d
		}
	}
	return deadline
}

// gracePeriod is the pod's grace period: the deletion's, else its spec's (30 s by default),
// at least 2 s as upstream's kubelet gives every container to react to SIGTERM.
func gracePeriod(pod *v1.Pod) time.Duration {
	if pod == nil {
		return 2 * time.Second
	}
	g := int64(30)
	if pod.DeletionGracePeriodSeconds != nil {
		g = *pod.DeletionGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if g < 2 {
		g = 2
	}
	return time.Duration(g) * time.Second
}

// findContainer is the spec of the pod's container, init container or ephemeral
// container name, or nil.
func findContainer(pod *v1.Pod, name string) *v1.Container {
	if pod == nil {
		return nil
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
	}
	return nil
}
