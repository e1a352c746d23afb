package kubelet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// describeSteps writes a plan's steps as short lines, times relative to now.
func describeSteps(p podPlan, now time.Time) []string {
	var out []string
	for _, s := range p.steps {
		line := s.kind.String()
		switch s.kind {
		case stepStopSandbox, stepRemoveSandbox:
			line += " " + s.sandbox
		case stepStart:
			line += fmt.Sprintf(" %s #%d", s.name, s.attempt)
			if s.replace != "" {
				line += " replacing " + s.replace
			}
		case stepBackOff:
			line += fmt.Sprintf(" %s %s", s.name, s.delay)
		case stepKill:
			line += fmt.Sprintf(" %s at +%s", s.name, s.deadline.Sub(now))
			if s.preStop {
				line += " preStop"
			}
			if s.why != "" {
				line += " (" + s.why + ")"
			}
		case stepRemoveContainer:
			line += " " + s.observed.ID
		}
		if s.group > 0 {
			line += fmt.Sprintf(" [%d]", s.group)
		}
		out = append(out, line)
	}
	return out
}

// TestPlanPod decides passes over pods from what the API and the runtime say, as raft's
// Ready is tested: input in, steps out, no runtime and no API.
func TestPlanPod(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	ctr := func(name string, pre bool) v1.Container {
		c := v1.Container{Name: name, Image: "busybox"}
		if pre {
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
		}
		return c
	}
	pod := func(policy v1.RestartPolicy, phase v1.PodPhase, inits []string, apps ...v1.Container) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1"},
			Spec: v1.PodSpec{RestartPolicy: policy, Containers: apps}, Status: v1.PodStatus{Phase: phase}}
		for _, n := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, ctr(n, false))
		}
		return p
	}
	deleted := func(p *v1.Pod, at time.Time, grace int64) *v1.Pod {
		p = p.DeepCopy()
		dts := metav1.NewTime(at.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &dts, &grace
		return p
	}
	ready := runtime.Sandbox{ID: "sb2", State: runtime.SandboxReady, CreatedAt: ago(time.Minute)}
	dead := runtime.Sandbox{ID: "sb1", State: runtime.SandboxNotReady, CreatedAt: ago(time.Hour)}
	cs := func(id, name string, attempt int, state runtime.ContainerState, code int32, finished time.Time) runtime.ContainerStatus {
		return runtime.ContainerStatus{ID: id, Name: name, Attempt: attempt, State: state, ExitCode: code, FinishedAt: finished, CreatedAt: ago(time.Duration(10-attempt) * time.Minute)}
	}
	withEphemeral := pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("app", false))
	for _, n := range []string{"new", "created", "done"} {
		withEphemeral.Spec.EphemeralContainers = append(withEphemeral.Spec.EphemeralContainers,
			v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "busybox"}})
	}

	for _, tc := range []struct {
		name        string
		in          planInput
		mode        planMode
		want        []string
		requeue     time.Duration
		withSandbox bool
	}{{
		name: "a new pod: pending at once, a sandbox, its volumes, the first init container only",
		in:   planInput{pod: pod(v1.RestartPolicyAlways, "", []string{"init-1", "init-2"}, ctr("app", false))},
		mode: modeRun,
		want: []string{"WritePending", "RunSandbox", "Volumes", "Start init-1 #0"},
	}, {
		name: "a dead sandbox is released before the new one; no pending write once a phase is set",
		in: planInput{pod: pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("a", false), ctr("b", false)),
			sandboxes:  []runtime.Sandbox{dead},
			containers: []runtime.ContainerStatus{cs("a0", "a", 0, runtime.ContainerExited, 137, ago(time.Hour))}},
		mode: modeRun,
		want: []string{"StopSandbox sb1", "RunSandbox", "Volumes", "Start a #1 [1]", "Start b #0 [1]"},
	}, {
		name: "init containers in order: the second runs, nothing else starts",
		in: planInput{pod: pod(v1.RestartPolicyAlways, v1.PodPending, []string{"init-1", "init-2"}, ctr("app", false)),
			sandboxes: []runtime.Sandbox{dead, ready},
			containers: []runtime.ContainerStatus{cs("i1", "init-1", 0, runtime.ContainerExited, 0, ago(time.Second)),
				cs("i2", "init-2", 0, runtime.ContainerRunning, 0, time.Time{})}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes"},
	}, {
		name: "an init container created but never started is replaced with the same attempt",
		in: planInput{pod: pod(v1.RestartPolicyAlways, v1.PodPending, []string{"init-1"}, ctr("app", false)),
			sandboxes:  []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("i1", "init-1", 2, runtime.ContainerCreated, 0, time.Time{})}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes", "Start init-1 #2 replacing i1"},
	}, {
		name: "a failed init container under Never: the pod has failed, nothing starts",
		in: planInput{pod: pod(v1.RestartPolicyNever, v1.PodPending, []string{"init-1"}, ctr("app", false)),
			sandboxes:  []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("i1", "init-1", 0, runtime.ContainerExited, 1, ago(time.Second))}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes"},
	}, {
		name: "a failed init container waits out its back-off, then restarts",
		in: planInput{pod: pod(v1.RestartPolicyOnFailure, v1.PodPending, []string{"init-1"}, ctr("app", false)),
			sandboxes:  []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("i1", "init-1", 1, runtime.ContainerExited, 1, ago(4*time.Second))}},
		mode: modeRun, withSandbox: true,
		want:    []string{"Volumes", "BackOff init-1 10s"},
		requeue: 6 * time.Second,
	}, {
		name: "a failed init container past its back-off restarts with the next attempt",
		in: planInput{pod: pod(v1.RestartPolicyOnFailure, v1.PodPending, []string{"init-1"}, ctr("app", false)),
			sandboxes:  []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("i1", "init-1", 1, runtime.ContainerExited, 1, ago(11*time.Second))}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes", "Start init-1 #2"},
	}, {
		name: "app containers: new, created, unhealthy, backing off, restarted, healthy",
		in: planInput{pod: pod(v1.RestartPolicyAlways, v1.PodRunning, []string{"init"},
			ctr("new", false), ctr("created", false), ctr("sick", true), ctr("crashed", false), ctr("exited", false), ctr("fine", false)),
			sandboxes: []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{
				cs("i", "init", 0, runtime.ContainerExited, 0, ago(time.Hour)),
				cs("c2", "created", 2, runtime.ContainerCreated, 0, time.Time{}),
				cs("s0", "sick", 0, runtime.ContainerRunning, 0, time.Time{}),
				cs("x1", "crashed", 1, runtime.ContainerExited, 2, ago(time.Second)),
				cs("e0", "exited", 0, runtime.ContainerExited, 0, ago(time.Hour)),
				cs("f0", "fine", 0, runtime.ContainerRunning, 0, time.Time{}),
			},
			unhealthy: map[string]string{"s0": "failed liveness probe"}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes", "Start new #0 [1]", "Start created #2 replacing c2 [1]",
			"Kill sick at +30s preStop (failed liveness probe) [1]", "BackOff crashed 10s", "Start exited #1 [1]"},
		requeue: afterKillCheck,
	}, {
		name: "exited app containers under OnFailure: only the failed one restarts",
		in: planInput{pod: pod(v1.RestartPolicyOnFailure, v1.PodRunning, nil, ctr("ok", false), ctr("bad", false)),
			sandboxes: []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("o0", "ok", 0, runtime.ContainerExited, 0, ago(time.Minute)),
				cs("b0", "bad", 0, runtime.ContainerExited, 1, ago(time.Minute))}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes", "Start bad #1 [1]"},
	}, {
		name: "ephemeral containers: started once, a created one replaced, an exited one left alone",
		in: planInput{pod: withEphemeral, sandboxes: []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("a0", "app", 0, runtime.ContainerRunning, 0, time.Time{}),
				cs("cr", "created", 0, runtime.ContainerCreated, 0, time.Time{}),
				cs("dn", "done", 0, runtime.ContainerExited, 0, ago(time.Minute))}},
		mode: modeRun, withSandbox: true,
		want: []string{"Volumes", "Start new #0", "Start created #0 replacing cr"},
	}, {
		name: "a finished pod: its ready sandbox stops, the rest stays for logs",
		in: planInput{pod: pod(v1.RestartPolicyNever, v1.PodSucceeded, nil, ctr("a", false)),
			sandboxes:  []runtime.Sandbox{dead, ready},
			containers: []runtime.ContainerStatus{cs("a0", "a", 0, runtime.ContainerExited, 0, ago(time.Minute))}},
		mode: modeFinished,
		want: []string{"StopSandbox sb2"},
	}, {
		name: "termination: every running container killed at the one deadline, status, sandbox stopped, final delete, then removals",
		in: planInput{pod: deleted(pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("web", true), ctr("side", false)), now, 6),
			sandboxes: []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("w0", "web", 0, runtime.ContainerRunning, 0, time.Time{}),
				cs("s0", "side", 0, runtime.ContainerRunning, 0, time.Time{}),
				cs("old", "side", 0, runtime.ContainerExited, 1, ago(time.Hour))},
			now: now, terminating: now},
		mode: modeTerminate,
		want: []string{"Kill web at +6s preStop [1]", "Kill side at +6s [1]", "WriteStatus", "StopSandbox sb2 [2]",
			"RemovePodDir", "FinalDelete", "RemoveSandbox sb2 [3]", "RemoveContainer w0", "RemoveContainer s0", "RemoveContainer old"},
	}, {
		name: "termination seen late: the deadline stays the deletion's, not a fresh grace period",
		in: planInput{pod: deleted(pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("web", true)), now.Add(-4*time.Second), 6),
			sandboxes:  []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("w0", "web", 0, runtime.ContainerRunning, 0, time.Time{})},
			now:        now, terminating: now},
		mode: modeTerminate,
		want: []string{"Kill web at +3s preStop [1]", "WriteStatus", "StopSandbox sb2 [2]", "RemovePodDir", "FinalDelete",
			"RemoveSandbox sb2 [3]", "RemoveContainer w0"},
	}, {
		name: "a kill restarted for a shorter grace period: its preStop does not run again",
		in: planInput{pod: deleted(pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("web", true), ctr("side", true)), now.Add(-time.Second), 2),
			sandboxes: []runtime.Sandbox{ready},
			containers: []runtime.ContainerStatus{cs("w0", "web", 0, runtime.ContainerRunning, 0, time.Time{}),
				cs("s0", "side", 0, runtime.ContainerRunning, 0, time.Time{})},
			preStopRan: map[string]bool{"w0": true},
			now:        now, terminating: now.Add(-time.Second)},
		mode: modeTerminate,
		want: []string{"Kill web at +1s [1]", "Kill side at +1s preStop [1]", "WriteStatus", "StopSandbox sb2 [2]",
			"RemovePodDir", "FinalDelete", "RemoveSandbox sb2 [3]", "RemoveContainer w0", "RemoveContainer s0"},
	}, {
		name: "a pod gone from the API is stopped as last seen, with no status and no delete",
		in: planInput{last: pod(v1.RestartPolicyAlways, v1.PodRunning, nil, ctr("web", true)),
			sandboxes:  []runtime.Sandbox{dead},
			containers: []runtime.ContainerStatus{cs("w0", "web", 0, runtime.ContainerRunning, 0, time.Time{})},
			now:        now, terminating: now},
		mode: modeTerminate,
		want: []string{"Kill web at +30s preStop [1]", "StopSandbox sb1 [2]", "RemovePodDir", "RemoveSandbox sb1 [3]", "RemoveContainer w0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.in.now.IsZero() {
				tc.in.now = now
			}
			p := planPod(tc.in)
			if p.mode != tc.mode {
				t.Errorf("mode %d, want %d", p.mode, tc.mode)
			}
			if got := describeSteps(p, now); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("steps:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if p.requeue != tc.requeue {
				t.Errorf("requeue %s, want %s", p.requeue, tc.requeue)
			}
			if tc.mode == modeRun && (p.sandbox != nil) != tc.withSandbox {
				t.Errorf("sandbox %+v, want one: %v", p.sandbox, tc.withSandbox)
			}
		})
	}
}

// TestGraceDeadline: the one deadline of a terminating pod is the delete request's time
// plus the grace period, whenever the kubelet learns of it; never before (deletionTimestamp
// is whole seconds), never more than a grace period after the kubelet saw it.
func TestGraceDeadline(t *testing.T) {
	req := time.Date(2026, 12, 5, 12, 0, 0, 400_000_000, time.UTC) // the DELETE, at .4 s
	del := func(grace int64) *v1.Pod {
		dts := metav1.NewTime(req.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &dts, DeletionGracePeriodSeconds: &grace}}
	}
	spec := func(grace int64) *v1.Pod {
		return &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace}}
	}
	for _, tc := range []struct {
		name     string
		pod, src *v1.Pod
		seen     time.Time
		want     time.Time
	}{
		{"seen at once: the grace period from then", del(6), del(6), req, req.Add(6 * time.Second)},
		{"seen 3 s late: the deletion's deadline, up to its second (deletionTimestamp is whole seconds)", del(6), del(6), req.Add(3 * time.Second), req.Truncate(time.Second).Add(7 * time.Second)},
		{"seen after it: at once", del(6), del(6), req.Add(10 * time.Second), req.Truncate(time.Second).Add(7 * time.Second)},
		{"a kubelet clock 20 s behind: a grace period from when it saw the deletion", del(6), del(6), req.Add(-20 * time.Second), req.Add(-14 * time.Second)},
		{"grace 1: at least 2 s", del(1), del(1), req, req.Add(2 * time.Second)},
		{"gone from the API: a grace period of the last spec from now", nil, spec(10), req, req.Add(10 * time.Second)},
		{"gone, default spec: 30 s", nil, &v1.Pod{}, req, req.Add(30 * time.Second)},
	} {
		if got := graceDeadline(tc.pod, tc.src, tc.seen); !got.Equal(tc.want) {
			t.Errorf("%s: deadline %s, want %s", tc.name, got.Format("15:04:05.000"), tc.want.Format("15:04:05.000"))
		}
		if got := graceDeadline(tc.pod, tc.src, tc.seen); tc.pod != nil && got.Before(req.Add(gracePeriod(tc.src))) && !tc.seen.Before(req) {
			t.Errorf("%s: deadline %s before the grace period is over", tc.name, got.Format("15:04:05.000"))
		}
	}
}
