package kubelet

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

func TestRestartDelay(t *testing.T) {
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for attempt, w := range want {
		if got := RestartDelay(attempt); got != w {
			t.Errorf("RestartDelay(%d) = %s, want %s", attempt, got, w)
		}
	}
	if RestartDelay(1000) != backoffMax {
		t.Error("delay must cap at 5 min")
	}
}

func TestShouldRestart(t *testing.T) {
	for _, tc := range []struct {
		p    v1.RestartPolicy
		code int32
		want bool
	}{
		{v1.RestartPolicyAlways, 0, true}, {v1.RestartPolicyAlways, 1, true}, {"", 0, true},
		{v1.RestartPolicyOnFailure, 0, false}, {v1.RestartPolicyOnFailure, 2, true},
		{v1.RestartPolicyNever, 0, false}, {v1.RestartPolicyNever, 1, false},
	} {
		if got := ShouldRestart(tc.p, tc.code); got != tc.want {
			t.Errorf("ShouldRestart(%q, %d) = %v", tc.p, tc.code, got)
		}
	}
}

func pod(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}, Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
	}
	return p
}

func ctr(name string, attempt int, state runtime.ContainerState, code int32) runtime.ContainerStatus {
	now := time.Unix(1000, 0)
	c := runtime.ContainerStatus{ID: name + "-" + string(rune('0'+attempt)), Name: name, Attempt: attempt, State: state, StartedAt: now, CreatedAt: now.Add(time.Duration(attempt) * time.Second)}
	if state == runtime.ContainerExited {
		c.ExitCode, c.FinishedAt = code, now.Add(time.Second)
	}
	return c
}

func cond(st v1.PodStatus, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestComputeStatusPhases(t *testing.T) {
	ready := &runtime.Sandbox{ID: "sb", State: runtime.SandboxReady, IP: "10.42.0.5"}
	for _, tc := range []struct {
		name       string
		pod        *v1.Pod
		sandbox    *runtime.Sandbox
		cs         []runtime.ContainerStatus
		waiting    map[string]Waiting
		phase      v1.PodPhase
		ready      v1.ConditionStatus
		initalized v1.ConditionStatus
	}{
		{"nothing yet", pod(v1.RestartPolicyAlways, nil, "a"), nil, nil, nil, v1.PodPending, v1.ConditionFalse, v1.ConditionTrue},
		{"init running", pod(v1.RestartPolicyAlways, []string{"i"}, "a"), ready, []runtime.ContainerStatus{ctr("i", 0, runtime.ContainerRunning, 0)}, nil, v1.PodPending, v1.ConditionFalse, v1.ConditionFalse},
		{"init failed, Never", pod(v1.RestartPolicyNever, []string{"i"}, "a"), ready, []runtime.ContainerStatus{ctr("i", 0, runtime.ContainerExited, 1)}, nil, v1.PodFailed, v1.ConditionFalse, v1.ConditionFalse},
		{"all running", pod(v1.RestartPolicyAlways, []string{"i"}, "a", "b"), ready, []runtime.ContainerStatus{ctr("i", 0, runtime.ContainerExited, 0), ctr("a", 0, runtime.ContainerRunning, 0), ctr("b", 0, runtime.ContainerRunning, 0)}, nil, v1.PodRunning, v1.ConditionTrue, v1.ConditionTrue},
		{"one not started", pod(v1.RestartPolicyAlways, nil, "a", "b"), ready, []runtime.ContainerStatus{ctr("a", 0, runtime.ContainerRunning, 0)}, nil, v1.PodPending, v1.ConditionFalse, v1.ConditionTrue},
		{"crash loop is Running", pod(v1.RestartPolicyAlways, nil, "a"), ready, []runtime.ContainerStatus{ctr("a", 1, runtime.ContainerExited, 2)}, map[string]Waiting{"a": {Reason: "CrashLoopBackOff"}}, v1.PodRunning, v1.ConditionFalse, v1.ConditionTrue},
		{"OnFailure all succeeded", pod(v1.RestartPolicyOnFailure, nil, "a"), ready, []runtime.ContainerStatus{ctr("a", 0, runtime.ContainerExited, 0)}, nil, v1.PodSucceeded, v1.ConditionFalse, v1.ConditionTrue},
		{"Never one failed", pod(v1.RestartPolicyNever, nil, "a", "b"), ready, []runtime.ContainerStatus{ctr("a", 0, runtime.ContainerExited, 0), ctr("b", 0, runtime.ContainerExited, 1)}, nil, v1.PodFailed, v1.ConditionFalse, v1.ConditionTrue},
	} {
		st := ComputeStatus(StatusInput{Pod: tc.pod, Sandbox: tc.sandbox, Containers: tc.cs, Waiting: tc.waiting, HostIP: "127.0.0.1", Now: time.Unix(2000, 0)})
		if st.Phase != tc.phase {
			t.Errorf("%s: phase %s, want %s", tc.name, st.Phase, tc.phase)
		}
		if got := cond(st, v1.PodReady); got != tc.ready {
			t.Errorf("%s: Ready %s, want %s", tc.name, got, tc.ready)
		}
		if got := cond(st, v1.PodInitialized); got != tc.initalized {
			t.Errorf("%s: Initialized %s, want %s", tc.name, got, tc.initalized)
		}
	}
}

func TestComputeStatusContainerStates(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "a", "oom", "probed")
	p.Spec.Containers[2].ReadinessProbe = &v1.Probe{}
	oom := ctr("oom", 0, runtime.ContainerExited, 137)
	oom.OOMKilled = true
	prev := ctr("a", 0, runtime.ContainerExited, 3)
	cur := ctr("a", 1, runtime.ContainerRunning, 0)
	probed := ctr("probed", 0, runtime.ContainerRunning, 0)
	in := StatusInput{Pod: p, Sandbox: &runtime.Sandbox{State: runtime.SandboxReady, IP: "10.42.0.9"},
		Containers: []runtime.ContainerStatus{prev, cur, oom, probed}, Now: time.Unix(2000, 0),
		Waiting: map[string]Waiting{"oom": {Reason: "CrashLoopBackOff", Message: "back-off 10s"}}}
	st := ComputeStatus(in)
	a, o, pr := st.ContainerStatuses[0], st.ContainerStatuses[1], st.ContainerStatuses[2]
	if a.State.Running == nil || a.RestartCount != 1 || a.LastTerminationState.Terminated == nil || a.LastTerminationState.Terminated.ExitCode != 3 || a.LastTerminationState.Terminated.Reason != "Error" {
		t.Errorf("restarted container: %+v", a)
	}
	if o.State.Waiting == nil || o.State.Waiting.Reason != "CrashLoopBackOff" || o.LastTerminationState.Terminated == nil || o.LastTerminationState.Terminated.Reason != "OOMKilled" {
		t.Errorf("oom container: %+v", o)
	}
	if pr.Ready {
		t.Errorf("a container with a readiness probe and no result yet must not be ready")
	}
	in.Ready = map[string]bool{probed.ID: true}
	if st := ComputeStatus(in); !st.ContainerStatuses[2].Ready {
		t.Errorf("readiness result ignored")
	}
	if st.PodIP != "10.42.0.9" || len(st.PodIPs) != 1 {
		t.Errorf("pod IP %q %v", st.PodIP, st.PodIPs)
	}
	// Recomputing over the stored status is stable: no needless status writes.
	p.Status = st
	in.Ready = nil
	in.Now = time.Unix(3000, 0)
	again := ComputeStatus(in)
	for i, c := range again.Conditions {
		if !c.LastTransitionTime.Equal(&st.Conditions[i].LastTransitionTime) {
			t.Errorf("condition %s transition time moved without a transition", c.Type)
		}
	}
}

func TestTerminalPhaseSticks(t *testing.T) {
	p := pod(v1.RestartPolicyNever, nil, "a")
	p.Status.Phase = v1.PodSucceeded
	st := ComputeStatus(StatusInput{Pod: p, Now: time.Now()})
	if st.Phase != v1.PodSucceeded || cond(st, v1.PodReady) != v1.ConditionFalse {
		t.Errorf("terminal pod: phase %s ready %s", st.Phase, cond(st, v1.PodReady))
	}
}

func TestTailOffset(t *testing.T) {
	data := []byte("a\nb\nc\n")
	for n, want := range map[int64]string{-1: "a\nb\nc\n", 0: "", 1: "c\n", 2: "b\nc\n", 5: "a\nb\nc\n"} {
		if got := string(data[TailOffset(data, n):]); got != want {
			t.Errorf("tail %d = %q, want %q", n, got, want)
		}
	}
	if got := string([]byte("x\ny")[TailOffset([]byte("x\ny"), 1):]); got != "y" {
		t.Errorf("tail without final newline = %q", got)
	}
}

func TestParseLogOptions(t *testing.T) {
	q, _ := url.ParseQuery("follow=true&tailLines=5&limitBytes=10&previous=false")
	o, err := ParseLogOptions(q)
	if err != nil || !o.Follow || o.TailLines != 5 || o.LimitBytes != 10 || o.Previous {
		t.Fatalf("%+v %v", o, err)
	}
	for _, bad := range []string{"tailLines=-1", "follow=maybe", "limitBytes=x"} {
		q, _ := url.ParseQuery(bad)
		if _, err := ParseLogOptions(q); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestContainerResources(t *testing.T) {
	c := &v1.Container{Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}}
	r := ContainerResources(c)
	if r.MemoryLimitBytes != 64<<20 || r.CPUQuota != 150000 || r.CPUPeriod != 100000 || r.CPUShares != 256 {
		t.Errorf("%+v", r)
	}
	if r := ContainerResources(&v1.Container{}); r != (runtime.Resources{}) {
		t.Errorf("no resources: %+v", r)
	}
}

func TestContainerEnvAndVolumes(t *testing.T) {
	p := pod(v1.RestartPolicyAlways, nil, "a")
	p.Labels = map[string]string{"app": "web"}
	c := &p.Spec.Containers[0]
	c.Env = []v1.EnvVar{{Name: "A", Value: "1"}, {Name: "IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "L", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}}}
	env, err := ContainerEnv(context.Background(), p, c, "spec.containers[0]", "10.42.0.3", "127.0.0.1", nil)
	if err != nil || len(env) != 3 || env[1] != "IP=10.42.0.3" || env[2] != "L=web" {
		t.Fatalf("env %v %v", env, err)
	}
	c.Env = []v1.EnvVar{{Name: "S", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{}}}}
	if _, err := ContainerEnv(context.Background(), p, c, "spec.containers[0]", "", "", nil); err == nil || !contains(err.Error(), "spec.containers[0].env[0].valueFrom") {
		t.Fatalf("unsupported env source: %v", err)
	}

	root := t.TempDir()
	host := filepath.Join(t.TempDir(), "made")
	doc := v1.HostPathDirectoryOrCreate
	p.Spec.Volumes = []v1.Volume{{Name: "e", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
		{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &doc}}},
		{Name: "nfs", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}}}
	paths, unsupported, err := VolumePaths(context.Background(), p, root, nil, "", "")
	if err != nil || len(unsupported) != 1 || unsupported[0] != "nfs" {
		t.Fatalf("volumes %v %v %v", paths, unsupported, err)
	}
	if fi, err := os.Stat(paths["e"]); err != nil || !fi.IsDir() || paths["e"] != filepath.Join(root, "pods", "uid", "volumes", "e") {
		t.Errorf("emptyDir %s %v", paths["e"], err)
	}
	if fi, err := os.Stat(host); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate did not create %s", host)
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "missing", MountPath: "/x"}}
	if _, err := ContainerMounts(p, c, "spec.containers[0]", paths); err == nil || !contains(err.Error(), "spec.containers[0].volumeMounts[0].name") {
		t.Errorf("unknown volume: %v", err)
	}
	mustExist := v1.HostPathDirectory
	p.Spec.Volumes = []v1.Volume{{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/nonexistent/dir", Type: &mustExist}}}}
	if _, _, err := VolumePaths(context.Background(), p, root, nil, "", ""); err == nil || !contains(err.Error(), "spec.volumes[0].hostPath") {
		t.Errorf("missing hostPath Directory: %v", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestContainerSecurity(t *testing.T) {
	u1, u2, g := int64(1), int64(2), int64(3)
	f, tr := false, true
	p := pod(v1.RestartPolicyAlways, nil, "a")
	p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &u1, RunAsGroup: &g}
	c := &p.Spec.Containers[0]
	if s := ContainerSecurity(p, c); *s.RunAsUser != 1 || *s.RunAsGroup != 3 || s.Privileged {
		t.Errorf("pod level: %+v", s)
	}
	c.SecurityContext = &v1.SecurityContext{RunAsUser: &u2, AllowPrivilegeEscalation: &f, ReadOnlyRootFilesystem: &tr,
		Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}}}
	s := ContainerSecurity(p, c)
	if *s.RunAsUser != 2 || *s.RunAsGroup != 3 || !s.NoNewPrivileges || !s.ReadOnlyRootFS || s.AddCaps[0] != "NET_ADMIN" || s.DropCaps[0] != "ALL" {
		t.Errorf("container level: %+v", s)
	}
}

func TestMissingLogMessage(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init"}}, Containers: []v1.Container{{Name: "app"}, {Name: "nostatus"}},
	}, Status: v1.PodStatus{
		InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}}}},
		ContainerStatuses:     []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
	}}
	for _, tc := range []struct {
		container string
		previous  bool
		want      string
	}{
		{"app", false, `container "app" in pod "web" is waiting to start: PodInitializing`},
		{"init", false, `container "init" in pod "web" is waiting to start: ErrImageNeverPull`},
		{"nostatus", false, `container "nostatus" in pod "web" is waiting to start: ContainerCreating`},
		{"app", true, `previous terminated container "app" in pod "web" not found`},
		{"nope", false, `container "nope" is not valid for pod "web"`},
		{"nope", true, `container "nope" is not valid for pod "web"`},
	} {
		if got := MissingLogMessage(pod, tc.container, tc.previous); got != tc.want {
			t.Errorf("%s previous=%v: %q, want %q", tc.container, tc.previous, got, tc.want)
		}
	}
}
