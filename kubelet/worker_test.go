package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// The pod worker's ordering rules, on the in-memory runtime: init containers one at a time
// and only after the previous one exited 0, app containers after all of them, and
// restartPolicy deciding what happens to exited containers.
func TestWorkerOrderingOnFakeRuntime(t *testing.T) {
	srv := apiservertest.Start(t)
	fake := runtime.NewFake("busybox")
	var mu sync.Mutex
	fake.Behavior = func(cfg runtime.ContainerConfig) (bool, int32) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasPrefix(cfg.Name, "init"):
			return true, 0
		case cfg.Name == "job":
			return true, 0
		case cfg.Name == "flaky":
			// Fails once, then succeeds: OnFailure restarts it exactly once.
			if cfg.Attempt == 0 {
				return true, 1
			}
			return true, 0
		}
		return false, 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kubelet.New(ctx, kubelet.Options{RESTConfig: srv.NodeConfig(t, "fake-node"), NodeName: "fake-node", RootDir: t.TempDir(),
		Runtime: fake, ServerAddr: "127.0.0.1:0", Logger: nil})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pods := srv.Client.CoreV1().Pods("default")
	mk := func(name string, policy v1.RestartPolicy, inits []string, apps ...string) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{NodeName: "fake-node", RestartPolicy: policy}}
		for _, n := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: n, Image: "busybox"})
		}
		for _, n := range apps {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "busybox"})
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("ordered", v1.RestartPolicyAlways, []string{"init-1", "init-2"}, "app-a", "app-b")
	waitPod(t, srv.Client, "default", "ordered", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && podReady(p) })
	var starts []string
	for _, c := range fake.Calls() {
		if n, ok := strings.CutPrefix(c, "StartContainer "); ok {
			starts = append(starts, n)
		}
	}
	if len(starts) != 4 || starts[0] != "init-1" || starts[1] != "init-2" {
		t.Errorf("start order %v: want init-1, init-2, then the app containers", starts)
	}

	mk("onfailure", v1.RestartPolicyOnFailure, nil, "flaky", "job")
	p := waitPod(t, srv.Client, "default", "onfailure", "Succeeded", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if cs := containerStatus(p, "flaky"); cs.RestartCount != 1 || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
		t.Errorf("flaky status %+v", cs)
	}
	if cs := containerStatus(p, "job"); cs.RestartCount != 0 {
		t.Errorf("job restarted: %+v", cs)
	}

	if err := pods.Delete(ctx, "ordered", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, srv, "ordered")
	// The deleted pod's sandbox is removed just after its deletion completes; the finished
	// pod's stays, stopped.
	for i := 0; ; i++ {
		sbs, _ := fake.ListSandboxes(ctx, "")
		if len(sbs) == 1 {
			break
		}
		if i > 100 {
			t.Errorf("sandboxes after deletion: %+v", sbs)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitGone(t *testing.T, srv *apiservertest.Server, name string) {
	t.Helper()
	for i := 0; ; i++ {
		_, err := srv.Client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if i > 900 {
			t.Fatalf("pod %s never deleted: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A missing image with imagePullPolicy Never is reported as upstream does: waiting reason
// ErrImageNeverPull with the policy named, during the retry back-off too, and a Warning event
// of that reason; the runtime is never asked to pull.
func TestImageNeverPullReason(t *testing.T) {
	srv := apiservertest.Start(t)
	fake := runtime.NewFake("busybox")
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kubelet.New(ctx, kubelet.Options{RESTConfig: srv.NodeConfig(t, "fake-node"), NodeName: "fake-node", RootDir: t.TempDir(),
		Runtime: fake, ServerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() { cancel(); <-done }()

	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "never", Namespace: "default"}, Spec: v1.PodSpec{NodeName: "fake-node",
		Containers: []v1.Container{{Name: "app", Image: "example.com/absent:1", ImagePullPolicy: v1.PullNever}}}}
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waiting := func(p *v1.Pod) *v1.ContainerStateWaiting {
		if cs := containerStatus(p, "app"); cs != nil {
			return cs.State.Waiting
		}
		return nil
	}
	got := waitPod(t, srv.Client, "default", "never", "waiting on its image", func(p *v1.Pod) bool { return waiting(p) != nil && waiting(p).Reason != "ContainerCreating" })
	want := `Container image "example.com/absent:1" is not present with pull policy of Never`
	if w := waiting(got); w.Reason != "ErrImageNeverPull" || w.Message != want {
		t.Errorf("waiting %+v, want ErrImageNeverPull: %s", w, want)
	}
	// The kubelet keeps re-checking (the image may be imported later); the reason stays.
	time.Sleep(1500 * time.Millisecond)
	got = waitPod(t, srv.Client, "default", "never", "still waiting", func(p *v1.Pod) bool { return waiting(p) != nil })
	if w := waiting(got); w.Reason != "ErrImageNeverPull" {
		t.Errorf("later waiting %+v, want ErrImageNeverPull", w)
	}
	evs, err := srv.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=never"})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, e := range evs.Items {
		reasons = append(reasons, e.Reason)
		if e.Reason == "ErrImageNeverPull" && e.Message != want {
			t.Errorf("event message %q, want %q", e.Message, want)
		}
	}
	if !strings.Contains(strings.Join(reasons, ","), "ErrImageNeverPull") {
		t.Errorf("events %v: want an ErrImageNeverPull warning", reasons)
	}
	for _, c := range fake.Calls() {
		if strings.HasPrefix(c, "PullImage") {
			t.Errorf("runtime asked to pull despite policy Never: %s", c)
		}
	}
}

// A volume that does not resolve holds every container in CreateContainerConfigError with
// the pod, field and reason; once it resolves the pod runs and that waiting state is gone.
func TestVolumeWaitingClears(t *testing.T) {
	srv := apiservertest.Start(t)
	fake := runtime.NewFake("busybox")
	ctx, cancel := context.WithCancel(context.Background())
	k, err := kubelet.New(ctx, kubelet.Options{RESTConfig: srv.NodeConfig(t, "fake-node"), NodeName: "fake-node", RootDir: t.TempDir(),
		Runtime: fake, ServerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	defer func() { cancel(); <-done }()

	dir := filepath.Join(t.TempDir(), "later")
	dirType := v1.HostPathDirectory
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "vol", Namespace: "default"}, Spec: v1.PodSpec{NodeName: "fake-node",
		Containers: []v1.Container{{Name: "app", Image: "busybox", VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes:    []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: &dirType}}}}}}
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, srv.Client, "default", "vol", "waiting on its volume", func(p *v1.Pod) bool {
		cs := containerStatus(p, "app")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CreateContainerConfigError"
	})
	want := "pod default/vol: spec.volumes[0].hostPath: " + dir + " is not an existing directory"
	if w := containerStatus(got, "app").State.Waiting; w.Message != want {
		t.Errorf("waiting message %q, want %q", w.Message, want)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	got = waitPod(t, srv.Client, "default", "vol", "Running once the volume resolves", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if cs := containerStatus(got, "app"); cs.State.Waiting != nil || cs.State.Running == nil {
		t.Errorf("app after its volume resolved: %+v", cs.State)
	}
}
