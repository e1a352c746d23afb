package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	ctrdimages "github.com/containerd/containerd/v2/core/images"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// warmSandbox is what containerd holds about one warm sandbox.
type warmSandbox struct {
	ip, netns string
	pid       uint32
}

// warmLabelFilter selects the warm sandboxes of a node's containerd namespace.
var warmLabelFilter = fmt.Sprintf(`labels."%s"==warm-sandbox`, runtime.LabelKind)

func ctrdOf(t *testing.T, n *node) *runtime.Containerd {
	t.Helper()
	rt, ok := n.kubelet.Runtime().(*runtime.Containerd)
	if !ok {
		t.Fatalf("runtime is %T, not *runtime.Containerd", n.kubelet.Runtime())
	}
	return rt
}

// warmInContainerd lists the containers labelled as warm sandboxes, by id.
func warmInContainerd(t *testing.T, rt *runtime.Containerd) map[string]warmSandbox {
	t.Helper()
	ctx := context.Background()
	ctrs, err := rt.Client().Containers(ctx, warmLabelFilter)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]warmSandbox{}
	for _, c := range ctrs {
		labels, err := c.Labels(ctx)
		if err != nil {
			t.Fatal(err)
		}
		w := warmSandbox{ip: labels[runtime.LabelIP], netns: labels[runtime.LabelNetNS]}
		if task, err := c.Task(ctx, nil); err == nil {
			w.pid = task.Pid()
		}
		out[c.ID()] = w
	}
	return out
}

func ids(m map[string]warmSandbox) []string {
	var out []string
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// waitWarm waits until the pool reports want ready sandboxes and containerd holds exactly
// that many, and returns them.
func waitWarm(t *testing.T, n *node, want int) map[string]warmSandbox {
	t.Helper()
	rt := ctrdOf(t, n)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := rt.WarmSandboxes()
		ws := warmInContainerd(t, rt)
		if got == want && len(ws) == want {
			return ws
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm pool: %d ready, %d in containerd (%v), want %d", got, len(ws), ids(ws), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sandboxOf is the one sandbox of a pod.
func sandboxOf(t *testing.T, n *node, p *v1.Pod) runtime.Sandbox {
	t.Helper()
	sbs, err := n.kubelet.Runtime().ListSandboxes(context.Background(), string(p.UID))
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of pod %s: %+v %v", p.Name, sbs, err)
	}
	return sbs[0]
}

// waitLog waits until the container's log contains every one of want, and returns it.
func waitLog(t *testing.T, srv *apiservertest.Server, n *node, pod, ctr string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := kubeletGet(t, srv, n, "/containerLogs/default/"+pod+"/"+ctr)
		ok := code == 200
		for _, w := range want {
			ok = ok && strings.Contains(body, w)
		}
		if ok {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %s/%s: %d %q, want it to contain %q", pod, ctr, code, body, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func warmNode(t *testing.T, srv *apiservertest.Server, name string, cleanupOnExit bool) *node {
	t.Helper()
	n := &node{name: name, root: t.TempDir(), daemon: nodetest.Containerd(t), warm: 2}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	startKubelet(t, srv, n, cleanupOnExit)
	return n
}

func ipAllocated(n *node, ip string) bool {
	_, err := os.Stat(filepath.Join(n.root, "cni", "ipam", "wasmkube", ip))
	return err == nil
}

// A pod takes a warm sandbox and gets its own hostname, /etc/hosts and pod IP in it; the
// pool refills. A hostNetwork pod does not take one. A warm sandbox whose pause died is
// removed when claimed, and the pod gets another.
func TestWarmSandboxClaimedByPod(t *testing.T) {
	srv := apiservertest.Start(t)
	n := warmNode(t, srv, "node-warm", true)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	rt := ctrdOf(t, n)

	before := waitWarm(t, n, 2)
	for id, w := range before {
		if w.ip == "" || w.netns == "" || w.pid == 0 {
			t.Errorf("warm sandbox %s: %+v", id, w)
		}
		if _, err := os.Stat(w.netns); err != nil {
			t.Errorf("warm sandbox %s: netns: %v", id, err)
		}
	}
	if sbs, err := rt.ListSandboxes(ctx, ""); err != nil || len(sbs) != 0 {
		t.Errorf("warm sandboxes must not be listed as pod sandboxes: %+v %v", sbs, err)
	}

	// A pod on the pod network takes one of them.
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-web", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1),
			Containers: []v1.Container{busybox("app", "echo host=$(hostname); cat /etc/hosts; echo file=$(cat /etc/hostname); echo end; sleep 3600")}},
	}
	created := time.Now() // after every warm sandbox was made
	if _, err := pods.Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, srv.Client, "default", web.Name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	sb := sandboxOf(t, n, p)
	if sb.CreatedAt.Before(created) {
		t.Errorf("claimed sandbox reports CreatedAt %s, before the pod was created (%s): the warm sandbox's age, not the claim's", sb.CreatedAt, created)
	}
	claimed, ok := before[sb.ID]
	if !ok {
		t.Fatalf("pod's sandbox %s was not one of the warm ones %v", sb.ID, ids(before))
	}
	if p.Status.PodIP != sb.IP || sb.IP != claimed.ip {
		t.Errorf("status.podIP %s, sandbox IP %s, warm sandbox IP %s: want all equal", p.Status.PodIP, sb.IP, claimed.ip)
	}
	if sb.Pod.UID != string(p.UID) || sb.Pod.Name != web.Name || sb.State != runtime.SandboxReady {
		t.Errorf("claimed sandbox %+v", sb)
	}
	out := waitLog(t, srv, n, web.Name, "app", "end")
	if !strings.Contains(out, "host=warm-web\n") || !strings.Contains(out, "file=warm-web\n") {
		t.Errorf("hostname in the pod is not the pod's name:\n%s", out)
	}
	if !strings.Contains(out, p.Status.PodIP+"\twarm-web\n") {
		t.Errorf("/etc/hosts lacks %s warm-web:\n%s", p.Status.PodIP, out)
	}

	// The pool refills to 2 with a new sandbox; the claimed one is no longer warm.
	after := waitWarm(t, n, 2)
	if _, still := after[sb.ID]; still {
		t.Errorf("claimed sandbox %s is still labelled warm", sb.ID)
	}

	// A hostNetwork pod gets a sandbox of its own; the pool is untouched.
	hostPod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-hostnet", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, HostNetwork: true, TerminationGracePeriodSeconds: int64p(1),
			Containers: []v1.Container{busybox("app", "echo up; sleep 3600")}},
	}
	if _, err := pods.Create(ctx, hostPod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	hp := waitPod(t, srv.Client, "default", hostPod.Name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if hsb := sandboxOf(t, n, hp); hsb.NetNSPath != "" {
		t.Errorf("hostNetwork pod's sandbox %s has a netns %q", hsb.ID, hsb.NetNSPath)
	} else if _, was := after[hsb.ID]; was {
		t.Errorf("hostNetwork pod took warm sandbox %s", hsb.ID)
	}
	if got, ws := rt.WarmSandboxes(), warmInContainerd(t, rt); got != 2 || fmt.Sprint(ids(ws)) != fmt.Sprint(ids(after)) {
		t.Errorf("pool after a hostNetwork pod: %d ready, %v in containerd, want 2: %v", got, ids(ws), ids(after))
	}

	// Both warm pauses are killed: claiming removes each dead one, and the pod still starts
	// in a sandbox of its own.
	for id, w := range after {
		if err := syscall.Kill(int(w.pid), syscall.SIGKILL); err != nil {
			t.Fatalf("kill pause of %s: %v", id, err)
		}
	}
	// Dead as containerd knows it: a claim in the instant before containerd has seen the
	// exit finds a running task (and the kubelet replaces that sandbox later), which is not
	// what this step checks.
	for id := range after {
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := rt.Client().LoadContainer(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			task, err := c.Task(ctx, nil)
			if err != nil {
				break // no task: dead
			}
			if st, err := task.Status(ctx); err == nil && st.Status != containerd.Running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("containerd still runs the killed pause of %s", id)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	late := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-late", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1),
			Containers: []v1.Container{busybox("app", "echo host=$(hostname); echo end; sleep 3600")}},
	}
	if _, err := pods.Create(ctx, late, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lp := waitPod(t, srv.Client, "default", late.Name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	lsb := sandboxOf(t, n, lp)
	if _, was := after[lsb.ID]; was {
		t.Errorf("pod got sandbox %s whose pause was killed", lsb.ID)
	}
	if lsb.State != runtime.SandboxReady || lp.Status.PodIP == "" || lp.Status.PodIP != lsb.IP {
		t.Errorf("pod after dead warm sandboxes: sandbox %+v, podIP %q", lsb, lp.Status.PodIP)
	}
	waitLog(t, srv, n, late.Name, "app", "host=warm-late\n", "end")
	for id, w := range after {
		if _, err := rt.Client().LoadContainer(ctx, id); err == nil {
			t.Errorf("dead warm sandbox %s still in containerd", id)
		}
		if _, err := os.Stat(w.netns); !os.IsNotExist(err) {
			t.Errorf("dead warm sandbox %s: netns %s not removed: %v", id, w.netns, err)
		}
		if ipAllocated(n, w.ip) && w.ip != lp.Status.PodIP {
			t.Errorf("dead warm sandbox %s: IP %s not released", id, w.ip)
		}
	}
	waitWarm(t, n, 2)
}

// Warm sandboxes outlive a kubelet that stops without cleanup and the next kubelet takes
// them back; a kubelet that stops with CleanupOnExit removes them, network included.
func TestWarmPoolRestartAndCleanup(t *testing.T) {
	srv := apiservertest.Start(t)
	n := warmNode(t, srv, "node-warm-restart", false)
	ctx := context.Background()

	first := waitWarm(t, n, 2)
	n.stop()
	startKubelet(t, srv, n, true)
	// Adoption happens before the pool creates anything, so the first full pool is the old one.
	again := waitWarm(t, n, 2)
	if fmt.Sprint(ids(again)) != fmt.Sprint(ids(first)) {
		t.Errorf("after restart the pool holds %v, want the same sandboxes %v", ids(again), ids(first))
	}
	for id, w := range again {
		if was, ok := first[id]; ok && (w.pid != was.pid || w.ip != was.ip) {
			t.Errorf("warm sandbox %s changed across the restart: %+v, was %+v", id, w, first[id])
		}
	}

	n.stop()
	net, err := cni.New(n.net)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.NewContainerd(ctx, runtime.ContainerdOptions{Address: n.daemon.Address(), Namespace: n.name, RootDir: t.TempDir(), Network: net})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if ctrs, err := rt.Client().Containers(ctx); err != nil || len(ctrs) != 0 {
		t.Errorf("containers left after cleanup on exit: %d %v", len(ctrs), err)
	}
	for id, w := range first {
		if _, err := os.Stat(w.netns); !os.IsNotExist(err) {
			t.Errorf("warm sandbox %s: netns %s left: %v", id, w.netns, err)
		}
		if ipAllocated(n, w.ip) {
			t.Errorf("warm sandbox %s: IP %s not released", id, w.ip)
		}
		if err := syscall.Kill(int(w.pid), 0); err == nil {
			t.Errorf("warm sandbox %s: pause %d still runs", id, w.pid)
		}
	}
	assertNodeClean(t, n)
}

// A kubelet restarted with another pause image must not hand out the warm sandboxes the
// previous one made of the old image: claimWarm promises a pod the pause image it asks for.
func TestWarmPoolPauseImageChange(t *testing.T) {
	srv := apiservertest.Start(t)
	n := warmNode(t, srv, "node-warm-pause", false)
	ctx := context.Background()
	old := waitWarm(t, n, 2)

	// The same pause image under a second name stands for a changed --pause-image.
	const other = "wasmkube.local/pause:other"
	rt := ctrdOf(t, n)
	img, err := rt.Client().ImageService().Get(ctx, images.PauseRef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Client().ImageService().Create(ctx, ctrdimages.Image{Name: other, Target: img.Target}); err != nil {
		t.Fatal(err)
	}
	n.stop()
	n.pause = other
	startKubelet(t, srv, n, true)
	waitWarm(t, n, 2)

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-other", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1),
			Containers: []v1.Container{busybox("app", "sleep 3600")}},
	}
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, srv.Client, "default", pod.Name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	sb := sandboxOf(t, n, p)
	c, err := ctrdOf(t, n).Client().LoadContainer(ctx, sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Image != other {
		_, wasOld := old[sb.ID]
		t.Errorf("pod's sandbox %s runs pause image %q, the kubelet asks for %q (a warm sandbox of the previous kubelet: %v)", sb.ID, info.Image, other, wasOld)
	}
}
