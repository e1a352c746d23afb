package kubelet_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
)

// TestDebugWithKubectl runs `kubectl debug` against a real kubelet on containerd: an
// ephemeral container with --target sees the target's processes (and only those: a
// container of its own otherwise), shares the pod's network and UTS namespaces, is
// attached to by kubectl (its output comes back only after kubectl's input reached it),
// reports in status.ephemeralContainerStatuses, is never restarted (nor by a restarted
// kubelet, which adopts a running one) and stops with the pod; --copy-to makes a copy with a debug container; node/NAME runs in the host's PID
// and network namespaces with the host's root at /host.
func TestDebugWithKubectl(t *testing.T) {
	srv := apiservertest.Start(t)
	// Pods outlive this first kubelet (the kubelet-restart subtest); the second cleans up.
	n := &node{name: "node-debug", root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	startKubelet(t, srv, n, false)
	top := t
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	img := images.BusyboxRef

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1), Containers: []v1.Container{
			busybox("app", "mkdir -p /www; echo debug-me > /www/index.html; exec httpd -f -p 127.0.0.1:8080 -h /www"),
			busybox("side", "exec sleep 3602"),
		}},
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, srv.Client, "default", "target", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	// The container waits for kubectl's line before it prints, so everything asserted
	// below came through the attach.
	debug := func(t *testing.T, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := kubectlRun(t, srv, stdin, nil, append([]string{"debug"}, args...)...)
		if code != 0 {
			t.Fatalf("kubectl debug %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}

	t.Run("target", func(t *testing.T) {
		out := debug(t, "hello\n", "target", "-i", "--image="+img, "--image-pull-policy=IfNotPresent", "--target=app", "-c", "dbg",
			"--", "sh", "-c", `read x; ps; wget -q -O- http://127.0.0.1:8080/; echo "host=$(hostname)"; echo "got $x"`)
		for _, want := range []string{"httpd -f -p 127.0.0.1:8080", "debug-me", "host=target", "got hello"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl debug --target=app: %q missing from the attached output:\n%s", want, out)
			}
		}
		if strings.Contains(out, "sleep 3602") {
			t.Errorf("kubectl debug --target=app sees container side's process:\n%s", out)
		}
		// Exited, reported, and not started again.
		p := waitPod(t, srv.Client, "default", "target", "dbg terminated", func(p *v1.Pod) bool {
			return len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Terminated != nil
		})
		if st := p.Status.EphemeralContainerStatuses[0]; st.Name != "dbg" || st.State.Terminated.ExitCode != 0 || st.RestartCount != 0 || st.Ready {
			t.Errorf("ephemeral container status: %+v", st)
		}
		if p.Status.Phase != v1.PodRunning || !podReady(p) {
			t.Errorf("pod after its debugger exited: phase %s, ready %v", p.Status.Phase, podReady(p))
		}
		logs, _, code := kubectlRun(t, srv, "", nil, "logs", "target", "-c", "dbg")
		if code != 0 || !strings.Contains(logs, "got hello") {
			t.Errorf("kubectl logs -c dbg = %q, exit %d", logs, code)
		}
		// A resync or two later there is still one dbg container, exited.
		time.Sleep(3 * time.Second)
		cs, err := n.kubelet.Runtime().ListContainers(ctx, string(p.UID))
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, c := range cs {
			if c.Name == "dbg" {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d dbg containers in the runtime, want 1 (never restarted)", count)
		}
	})

	t.Run("no-target", func(t *testing.T) {
		out := debug(t, "hi\n", "target", "-i", "--image="+img, "--image-pull-policy=IfNotPresent", "-c", "free",
			"--", "sh", "-c", `read x; ps; echo "got $x"`)
		if !strings.Contains(out, "got hi") || strings.Contains(out, "httpd") || strings.Contains(out, "sleep 3602") {
			t.Errorf("kubectl debug without --target: want its own processes only:\n%s", out)
		}
	})

	t.Run("kubelet-restart", func(t *testing.T) {
		// Without -i kubectl returns once the container exists.
		debug(t, "", "target", "--image="+img, "--image-pull-policy=IfNotPresent", "--target=app", "-c", "keeper", "--", "sleep", "3600")
		running := func(p *v1.Pod) string {
			for _, s := range p.Status.EphemeralContainerStatuses {
				if s.Name == "keeper" && s.State.Running != nil {
					return s.ContainerID
				}
			}
			return ""
		}
		before := running(waitPod(t, srv.Client, "default", "target", "keeper running", func(p *v1.Pod) bool { return running(p) != "" }))
		n.stop()
		startKubelet(top, srv, n, true) // for the subtests after this one too
		// The new kubelet adopts it: a later status write (the node's lease and status are
		// rewritten at start, the pod's after its first sync) still shows the same container.
		time.Sleep(3 * time.Second)
		p := waitPod(t, srv.Client, "default", "target", "keeper running", func(p *v1.Pod) bool { return running(p) != "" })
		if after := running(p); after != before {
			t.Errorf("keeper after the kubelet restart: %s, was %s (restarted, not adopted)", after, before)
		}
		cs, err := n.kubelet.Runtime().ListContainers(ctx, string(p.UID))
		if err != nil {
			t.Fatal(err)
		}
		count := 0
		for _, c := range cs {
			if c.Name == "keeper" {
				count++
			}
		}
		if count != 1 {
			t.Errorf("%d keeper containers after the restart, want 1", count)
		}
		// exec into the adopted ephemeral container: still in the target's PID namespace.
		out, errOut, code := kubectlRun(t, srv, "", nil, "exec", "target", "-c", "keeper", "--", "ps")
		if code != 0 || !strings.Contains(out, "httpd -f -p 127.0.0.1:8080") {
			t.Errorf("exec -c keeper after the restart = %q, %q, exit %d", out, errOut, code)
		}
	})

	t.Run("copy-to", func(t *testing.T) {
		out := debug(t, "copy\n", "target", "-i", "--copy-to=target-debug", "--same-node", "--container=debugger", "--image="+img,
			"--image-pull-policy=IfNotPresent", "--", "sh", "-c",
			// The copy's app container starts beside the debugger: wait for its server.
			`read x; echo "copied $x"; for i in $(seq 100); do wget -q -O- http://127.0.0.1:8080/ && break; sleep 0.2; done`)
		if !strings.Contains(out, "copied copy") || !strings.Contains(out, "debug-me") {
			t.Errorf("kubectl debug --copy-to: %s", out)
		}
		cp, err := pods.Get(ctx, "target-debug", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(cp.Spec.Containers) != 3 || cp.Spec.Containers[2].Name != "debugger" {
			t.Errorf("the copy's containers: %+v", cp.Spec.Containers)
		}
	})

	t.Run("node", func(t *testing.T) {
		mark := filepath.Join(t.TempDir(), "mark")
		if err := os.WriteFile(mark, []byte("on-the-host\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// The test's own containerd runs on the host: in the host's PID namespace ps shows it.
		out := debug(t, "x\n", "node/"+n.name, "-i", "--image="+img, "--image-pull-policy=IfNotPresent",
			"--", "sh", "-c", `read x; ps -o pid,comm; cat /host`+mark+`; echo "pid1=$(cat /proc/1/comm)"`)
		if !strings.Contains(out, "on-the-host") || !strings.Contains(out, "containerd") || strings.Contains(out, "pid1=sh") {
			t.Errorf("kubectl debug node/%s: want the host's processes and root at /host:\n%s", n.name, out)
		}
	})

	// Deleting the pod stops its ephemeral containers with the rest: the kubelet's final
	// delete comes after every container of the pod is gone.
	p, err := pods.Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := pods.Delete(ctx, "target", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, srv, "target")
	// Removed just after the deletion completes (as upstream's garbage collection).
	for i := 0; ; i++ {
		cs, err := n.kubelet.Runtime().ListContainers(ctx, string(p.UID))
		if err == nil && len(cs) == 0 {
			break
		}
		if i > 300 {
			t.Errorf("containers of the deleted pod left: %+v %v", cs, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
}
