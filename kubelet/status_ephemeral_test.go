package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Ephemeral containers are reported in ephemeralContainerStatuses, are never ready, and
// change neither the phase nor the pod's readiness.
func TestComputeStatusEphemeralContainers(t *testing.T) {
	ready := &runtime.Sandbox{ID: "sb", State: runtime.SandboxReady, IP: "10.42.0.5"}
	p := pod(v1.RestartPolicyNever, nil, "a")
	p.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "run", Image: "busybox"}, TargetContainerName: "a"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "done", Image: "busybox"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "failed", Image: "busybox"}},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "held", Image: "busybox"}, TargetContainerName: "a"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "new", Image: "busybox"}},
	}
	cs := []runtime.ContainerStatus{ctr("a", 0, runtime.ContainerRunning, 0), ctr("run", 0, runtime.ContainerRunning, 0),
		ctr("done", 0, runtime.ContainerExited, 0), ctr("failed", 0, runtime.ContainerExited, 7)}
	held := Waiting{Reason: "CreateContainerConfigError", Message: `target container "a" of ephemeral container "held" is not running`}
	st := ComputeStatus(StatusInput{Pod: p, Sandbox: ready, Containers: cs, Waiting: map[string]Waiting{"held": held}, Now: time.Unix(2000, 0)})

	if st.Phase != v1.PodRunning || cond(st, v1.PodReady) != v1.ConditionTrue {
		t.Errorf("phase %s, Ready %s: want Running and Ready (a failed ephemeral container fails nothing)", st.Phase, cond(st, v1.PodReady))
	}
	if len(st.ContainerStatuses) != 1 || len(st.EphemeralContainerStatuses) != 5 {
		t.Fatalf("%d container and %d ephemeral statuses, want 1 and 5", len(st.ContainerStatuses), len(st.EphemeralContainerStatuses))
	}
	byName := map[string]v1.ContainerStatus{}
	for _, s := range st.EphemeralContainerStatuses {
		if s.Ready {
			t.Errorf("ephemeral container %s is ready", s.Name)
		}
		byName[s.Name] = s
	}
	if s := byName["run"]; s.State.Running == nil || s.ContainerID != "containerd://run-0" {
		t.Errorf("run: %+v", s)
	}
	if s := byName["done"]; s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
		t.Errorf("done: %+v", s.State)
	}
	if s := byName["failed"]; s.State.Terminated == nil || s.State.Terminated.ExitCode != 7 || s.State.Terminated.Reason != "Error" {
		t.Errorf("failed: %+v", s.State)
	}
	if s := byName["held"]; s.State.Waiting == nil || *s.State.Waiting != (v1.ContainerStateWaiting{Reason: held.Reason, Message: held.Message}) {
		t.Errorf("held: %+v", s.State)
	}
	if s := byName["new"]; s.State.Waiting == nil || s.State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("new: %+v", s.State)
	}
}
