package kubelet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Waiting is a reason the pod worker holds a container back (image pull failure, back-off,
// bad config), shown as the container's waiting state.
type Waiting struct {
	Reason, Message string
}

// StatusInput is everything ComputeStatus needs; it does no I/O.
type StatusInput struct {
	Pod        *v1.Pod
	Sandbox    *runtime.Sandbox // the current sandbox, nil if none
	Containers []runtime.ContainerStatus
	Ready      map[string]bool // runtime id -> readiness (absent: no probe result yet)
	Started    map[string]bool // runtime id -> startup probe passed (absent: no startup probe)
	Waiting    map[string]Waiting
	Messages   map[string]string // runtime id -> termination message of an exited container
	HostIP     string
	Now        time.Time
}

// LatestByName returns, per container name, its highest attempt and the attempt before it.
func LatestByName(cs []runtime.ContainerStatus) (latest, previous map[string]*runtime.ContainerStatus) {
	sorted := append([]runtime.ContainerStatus(nil), cs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Attempt != sorted[j].Attempt {
			return sorted[i].Attempt > sorted[j].Attempt
		}
		return sorted[i].CreatedAt.After(sorted[j].CreatedAt)
	})
	latest, previous = map[string]*runtime.ContainerStatus{}, map[string]*runtime.ContainerStatus{}
	for i := range sorted {
		c := &sorted[i]
		if latest[c.Name] == nil {
			latest[c.Name] = c
		} else if previous[c.Name] == nil {
			previous[c.Name] = c
		}
	}
	return latest, previous
}

func apiTime(t time.Time) metav1.Time {
	if t.IsZero() {
		return metav1.Time{}
	}
	// The API keeps seconds; truncating here keeps a recomputed status equal to the stored one.
	return metav1.NewTime(t.Truncate(time.Second))
}

func terminatedState(c *runtime.ContainerStatus, msgs map[string]string) *v1.ContainerStateTerminated {
	reason := "Error"
	switch {
	case c.OOMKilled:
		reason = "OOMKilled"
	case c.ExitCode == 0:
		reason = "Completed"
	}
	return &v1.ContainerStateTerminated{ExitCode: c.ExitCode, Reason: reason, StartedAt: apiTime(c.StartedAt),
		FinishedAt: apiTime(c.FinishedAt), ContainerID: "containerd://" + c.ID, Message: msgs[c.ID]}
}

func exited(c *runtime.ContainerStatus) bool {
	return c.State == runtime.ContainerExited || c.State == runtime.ContainerUnknown
}

// ComputeStatus derives the pod's status from what runs. Fields it does not own (qosClass,
// nominatedNodeName, foreign conditions) are kept from the pod's current status.
func ComputeStatus(in StatusInput) v1.PodStatus {
	pod := in.Pod
	old := pod.Status
	st := *old.DeepCopy()
	latest, previous := LatestByName(in.Containers)

	containerStatus := func(c *v1.Container, defaultWaiting string) v1.ContainerStatus {
		cs := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		l := latest[c.Name]
		if p := previous[c.Name]; p != nil && exited(p) {
			cs.LastTerminationState.Terminated = terminatedState(p, in.Messages)
		}
		if l == nil {
			w, ok := in.Waiting[c.Name]
			if !ok {
				w = Waiting{Reason: defaultWaiting}
			}
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			return cs
		}
		cs.RestartCount = int32(l.Attempt)
		cs.ContainerID = "containerd://" + l.ID
		cs.ImageID = l.ImageRef
		if l.Image != "" {
			cs.Image = l.Image
		}
		switch {
		case l.State == runtime.ContainerRunning:
			cs.State.Running = &v1.ContainerStateRunning{StartedAt: apiTime(l.StartedAt)}
			started := true
			if s, ok := in.Started[l.ID]; ok {
				started = s
			}
			cs.Started = &started
			ready, ok := in.Ready[l.ID]
			if !ok {
				ready = c.ReadinessProbe == nil
			}
			cs.Ready = ready && started
		case exited(l):
			f := false
			cs.Started = &f
			if w, ok := in.Waiting[c.Name]; ok {
				cs.State.Waiting = &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
				cs.LastTerminationState = v1.ContainerState{Terminated: terminatedState(l, in.Messages)}
			} else {
				cs.State.Terminated = terminatedState(l, in.Messages)
			}
		default:
			cs.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
		}
		return cs
	}

	// Init containers: done when each has exited 0 in order.
	initialized, initFailed := true, false
	st.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		waitingReason := "PodInitializing"
		cs := containerStatus(c, waitingReason)
		if initialized {
			l := latest[c.Name]
			switch {
			case l == nil || !exited(l):
				initialized = false
			case l.ExitCode != 0:
				initialized = false
				if !ShouldRestart(pod.Spec.RestartPolicy, l.ExitCode) {
					initFailed = true
				}
			}
		}
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			cs.Ready = true
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
	}

	appWaiting := "ContainerCreating"
	if !initialized {
		appWaiting = "PodInitializing"
	}
	st.ContainerStatuses = nil
	var running, waiting, stopped, succeeded int
	var unready []string
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := containerStatus(c, appWaiting)
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waiting++
		}
		if !cs.Ready {
			unready = append(unready, c.Name)
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}

	// Ephemeral containers count for neither the phase nor readiness, and are never ready
	// (upstream's kubelet reports them the same way).
	st.EphemeralContainerStatuses = nil
	for i := range pod.Spec.EphemeralContainers {
		cs := containerStatus((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon), "ContainerCreating")
		cs.Ready = false
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}

	switch {
	case old.Phase == v1.PodSucceeded || old.Phase == v1.PodFailed:
		st.Phase = old.Phase // terminal phases never change
	case initFailed:
		st.Phase = v1.PodFailed
	case !initialized, waiting > 0:
		st.Phase = v1.PodPending
	case running > 0:
		st.Phase = v1.PodRunning
	case stopped > 0:
		switch {
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways || pod.Spec.RestartPolicy == "":
			st.Phase = v1.PodRunning
		case stopped == succeeded:
			st.Phase = v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			st.Phase = v1.PodFailed
		default:
			st.Phase = v1.PodRunning
		}
	default:
		st.Phase = v1.PodPending
	}

	if in.Sandbox != nil && in.Sandbox.State == runtime.SandboxReady && in.Sandbox.IP != "" {
		st.PodIP = in.Sandbox.IP
		st.PodIPs = []v1.PodIP{{IP: in.Sandbox.IP}}
	}
	if in.HostIP != "" {
		st.HostIP = in.HostIP
		st.HostIPs = []v1.HostIP{{IP: in.HostIP}}
	}
	if st.StartTime == nil {
		t := apiTime(in.Now)
		st.StartTime = &t
	}

	terminal := st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed
	sandboxReady := in.Sandbox != nil && in.Sandbox.State == runtime.SandboxReady && !terminal
	containersReady := len(unready) == 0 && !terminal
	setCondition(&st, old, in.Now, v1.PodScheduled, true, "", "")
	setCondition(&st, old, in.Now, v1.PodReadyToStartContainers, sandboxReady, "", "")
	initReason := ""
	if !initialized {
		initReason = "ContainersNotInitialized"
	}
	setCondition(&st, old, in.Now, v1.PodInitialized, initialized, initReason, "")
	readyReason, readyMsg := "", ""
	switch {
	case terminal:
		readyReason = "PodCompleted"
	case len(unready) > 0:
		readyReason, readyMsg = "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	setCondition(&st, old, in.Now, v1.ContainersReady, containersReady, readyReason, readyMsg)
	setCondition(&st, old, in.Now, v1.PodReady, containersReady, readyReason, readyMsg)
	return st
}

func setCondition(st *v1.PodStatus, old v1.PodStatus, now time.Time, t v1.PodConditionType, ok bool, reason, msg string) {
	status := v1.ConditionFalse
	if ok {
		status = v1.ConditionTrue
	}
	cond := v1.PodCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: apiTime(now)}
	for _, oc := range old.Conditions {
		if oc.Type == t && oc.Status == status {
			cond.LastTransitionTime = oc.LastTransitionTime
			cond.LastProbeTime = oc.LastProbeTime
		}
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			st.Conditions[i] = cond
			return
		}
	}
	st.Conditions = append(st.Conditions, cond)
}
