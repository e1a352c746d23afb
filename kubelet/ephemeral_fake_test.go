package kubelet_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// The pod worker's rules for ephemeral containers, on the in-memory runtime: one that
// exits (even failing, under restartPolicy Always) is never started again; it is created
// with its target's runtime id; a target that does not run holds it back with the reason.
func TestEphemeralContainersOnFakeRuntime(t *testing.T) {
	srv := apiservertest.Start(t)
	fake := runtime.NewFake("busybox")
	var mu sync.Mutex
	targets := map[string]string{} // ephemeral container -> TargetContainerID it was created with
	fake.Behavior = func(cfg runtime.ContainerConfig) (bool, int32) {
		mu.Lock()
		defer mu.Unlock()
		switch cfg.Name {
		case "quick":
			targets[cfg.Name] = cfg.TargetContainerID
			return true, 1
		case "done":
			return true, 0
		}
		return false, 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kubelet.New(ctx, kubelet.Options{RESTConfig: srv.NodeConfig(t, "fake-node"), NodeName: "fake-node", RootDir: t.TempDir(),
		Runtime: fake, ServerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pods := srv.Client.CoreV1().Pods("default")
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: v1.PodSpec{NodeName: "fake-node",
		RestartPolicy: v1.RestartPolicyAlways, AutomountServiceAccountToken: new(bool),
		Containers: []v1.Container{{Name: "app", Image: "busybox"}, {Name: "done", Image: "busybox"}}}}
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, srv.Client, "default", "p", "app running", func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Running != nil
	})
	// add adds an ephemeral container as kubectl debug does; the kubelet writes the pod's
	// status meanwhile, so a conflict reads the pod again.
	add := func(_ *v1.Pod, name, target string) *v1.Pod {
		t.Helper()
		var out *v1.Pod
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, "p", metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox", TerminationMessagePolicy: v1.TerminationMessageReadFile},
				TargetContainerName:      target})
			out, err = pods.UpdateEphemeralContainers(ctx, "p", p, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	ephemeral := func(p *v1.Pod, name string) v1.ContainerStatus {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == name {
				return s
			}
		}
		return v1.ContainerStatus{}
	}

	p = add(p, "quick", "app")
	p = waitPod(t, srv.Client, "default", "p", "quick terminated", func(p *v1.Pod) bool { return ephemeral(p, "quick").State.Terminated != nil })
	if s := ephemeral(p, "quick"); s.State.Terminated.ExitCode != 1 || s.RestartCount != 0 {
		t.Errorf("quick: %+v", s)
	}
	mu.Lock()
	gotTarget := targets["quick"]
	mu.Unlock()
	if want := strings.TrimPrefix(containerStatus(p, "app").ContainerID, "containerd://"); gotTarget != want {
		t.Errorf("quick created with target id %q, want app's %q", gotTarget, want)
	}

	// "done" has exited: a debugger targeting it waits, saying why.
	p = add(p, "late", "done")
	p = waitPod(t, srv.Client, "default", "p", "late held back", func(p *v1.Pod) bool {
		w := ephemeral(p, "late").State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError"
	})
	if w := ephemeral(p, "late").State.Waiting; !strings.Contains(w.Message, `target container "done" of ephemeral container "late" is not running`) {
		t.Errorf("late waiting: %+v", w)
	}

	// Later syncs (the pod was updated twice, and resyncs) start neither again.
	time.Sleep(3 * time.Second)
	starts := map[string]int{}
	for _, c := range fake.Calls() {
		if n, ok := strings.CutPrefix(c, "StartContainer "); ok {
			starts[n]++
		}
	}
	if starts["quick"] != 1 || starts["late"] != 0 {
		t.Errorf("starts %v: want quick once and late never", starts)
	}
}
