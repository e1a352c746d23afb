package kubelet_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/cni"
	kcontainerd "github.com/wasmkube/wasmkube/kubelet/containerd"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// node is a real kubelet on a private containerd, registered with a test API server.
type node struct {
	name    string
	root    string
	net     cni.Config
	daemon  *kcontainerd.Daemon
	kubelet *kubelet.Kubelet
	stop    func()
	warm    int    // warm sandboxes
	pause   string // pause image; empty: the default
	// options, when set, adds to the kubelet's options (wasm hooks, config file).
	options func(*kubelet.Options)
}

func imagesDir(t testing.TB) string {
	bb, pause := nodetest.ImageArchives(t)
	dir := t.TempDir()
	for _, f := range []string{bb, pause} {
		if err := os.Symlink(f, filepath.Join(dir, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func startKubeletB(b *testing.B, srv *apiservertest.Server, n *node) { startKubelet(b, srv, n, true) }

func startKubelet(t testing.TB, srv *apiservertest.Server, n *node, cleanupOnExit bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	opts := kubelet.Options{
		RESTConfig: srv.NodeConfig(t, n.name), NetworkPolicyRESTConfig: srv.NetworkPolicyConfig(t, n.name), NodeName: n.name, RootDir: n.root,
		ContainerdAddress: n.daemon.Address(), Snapshotter: n.daemon.Snapshotter(),
		PodCIDR: n.net.PodCIDR, Bridge: n.net.Bridge, ImagesDir: imagesDir(t),
		ServerAddr: "127.0.0.1:0", CleanupOnExit: cleanupOnExit, ParallelPodStarts: envInt("WASMKUBE_BENCH_PARALLEL"),
		WarmSandboxes: n.warm, PauseImage: n.pause,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()})),
	}
	if n.options != nil {
		n.options(&opts)
	}
	k, err := kubelet.New(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	n.kubelet = k
	stopped := false
	n.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("kubelet run: %v", err)
		}
	}
	t.Cleanup(n.stop)
}

func newNode(t *testing.T, srv *apiservertest.Server, name string) *node {
	t.Helper()
	n := &node{name: name, root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	startKubelet(t, srv, n, true)
	return n
}

func waitPod(t *testing.T, c kubernetes.Interface, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var last *v1.Pod
	for ctx.Err() == nil {
		p, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		} else if !apierrors.IsNotFound(err) {
			t.Logf("get pod: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s: never %s; last status: %+v", ns, name, what, last.Status)
	return nil
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func condition(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func containerStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func kubeletGet(t *testing.T, srv *apiservertest.Server, n *node, path string) (int, string) {
	t.Helper()
	return kubeletGetAs(t, srv.Config.BearerToken, n, path)
}

func kubeletGetAs(t *testing.T, token string, n *node, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://127.0.0.1:%d%s", n.kubelet.Port(), path), nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 30 * time.Second}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func busybox(name string, cmd string) v1.Container {
	return v1.Container{Name: name, Image: images.BusyboxRef, ImagePullPolicy: v1.PullIfNotPresent, Command: []string{"sh", "-c", cmd}}
}

func int64p(i int64) *int64 { return &i }

// assertNoTrace checks that the node holds no container, sandbox, veth, netns or mount. A
// pod's containers and snapshots are removed just after its deletion completes (as
// upstream's garbage collection), so it waits for them a while.
func assertNoTrace(t *testing.T, n *node) {
	t.Helper()
	ctx := context.Background()
	rt := n.kubelet.Runtime()
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left = left[:0]
		if cs, err := rt.ListContainers(ctx, ""); err != nil || len(cs) != 0 {
			left = append(left, fmt.Sprintf("containers left: %+v %v", cs, err))
		}
		if sbs, err := rt.ListSandboxes(ctx, ""); err != nil || len(sbs) != 0 {
			left = append(left, fmt.Sprintf("sandboxes left: %+v %v", sbs, err))
		}
		left = append(left, nodeTraces(t, n)...)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, l := range left {
		t.Error(l)
	}
}

// assertNodeClean checks that the node holds no veth, network namespace or mount (but the
// running daemon's state tmpfs); it needs no kubelet.
func assertNodeClean(t *testing.T, n *node) {
	t.Helper()
	for _, l := range nodeTraces(t, n) {
		t.Error(l)
	}
}

// nodeTraces lists the veths, network namespaces and mounts a node has left (but the
// running daemon's state tmpfs).
func nodeTraces(t *testing.T, n *node) []string {
	t.Helper()
	var left []string
	if v := nodetest.Veths(t, n.net.Bridge); len(v) != 0 {
		left = append(left, fmt.Sprintf("veths left on %s: %v", n.net.Bridge, v))
	}
	if ents, _ := os.ReadDir(filepath.Join(n.root, "runtime", "netns")); len(ents) != 0 {
		left = append(left, fmt.Sprintf("network namespaces left: %d", len(ents)))
	}
	if m := nodetest.MountsUnder(t, n.root); len(m) != 0 {
		left = append(left, fmt.Sprintf("mounts left under the kubelet root: %v", m))
	}
	var mounts []string
	for _, m := range nodetest.MountsUnder(t, filepath.Dir(n.daemon.Address())) {
		if m != n.daemon.StateDir() { // the running daemon's own tmpfs
			mounts = append(mounts, m)
		}
	}
	if len(mounts) != 0 {
		left = append(left, fmt.Sprintf("mounts left under containerd's root: %v", mounts))
	}
	return left
}

// kubectl runs the real kubectl against the test API server and returns its stdout.
func kubectl(t *testing.T, srv *apiservertest.Server, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func TestNodeRegistrationAndLease(t *testing.T) {
	srv := apiservertest.Start(t)
	n := newNode(t, srv, "node-reg")
	ctx := context.Background()
	var node *v1.Node
	for i := 0; i < 300; i++ {
		var err error
		node, err = srv.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && len(node.Status.Conditions) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if node == nil {
		t.Fatal("node never registered")
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		t.Errorf("node not Ready: %+v", node.Status.Conditions)
	}
	if p := node.Status.Capacity[v1.ResourcePods]; p.Value() != 110 {
		t.Errorf("pods capacity %v", p.String())
	}
	if c := node.Status.Capacity[v1.ResourceCPU]; c.Value() < 1 {
		t.Errorf("cpu capacity %v", c.String())
	}
	if node.Status.NodeInfo.KubeletVersion != kubelet.Version || !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("nodeInfo %+v", node.Status.NodeInfo)
	}
	if int(node.Status.DaemonEndpoints.KubeletEndpoint.Port) != n.kubelet.Port() {
		t.Errorf("kubelet port %d, serving on %d", node.Status.DaemonEndpoints.KubeletEndpoint.Port, n.kubelet.Port())
	}
	if len(node.Status.Addresses) == 0 || node.Status.Addresses[0].Address != "127.0.0.1" {
		t.Errorf("addresses %+v", node.Status.Addresses)
	}
	for i := 0; ; i++ {
		l, err := srv.Client.CoordinationV1().Leases("kube-node-lease").Get(ctx, n.name, metav1.GetOptions{})
		if err == nil && l.Spec.RenewTime != nil && *l.Spec.HolderIdentity == n.name {
			break
		}
		if i > 300 {
			t.Fatalf("no lease: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code, body := kubeletGet(t, srv, n, "/healthz"); code != 200 || body != "ok" {
		t.Errorf("healthz: %d %q", code, body)
	}
	// Logs need a token of system:masters: none is 401, a node's is 403, a bogus one 401.
	for _, tc := range []struct {
		token string
		code  int
	}{{"", 401}, {srv.NodeConfig(t, "other").BearerToken, 403}, {"not-a-token", 401}, {srv.Config.BearerToken, 404}} {
		if code, body := kubeletGetAs(t, tc.token, n, "/containerLogs/default/none/c"); code != tc.code {
			t.Errorf("logs with token %.8q: %d %q, want %d", tc.token, code, body, tc.code)
		}
	}
}

func TestPodLifecycleEndToEnd(t *testing.T) {
	srv := apiservertest.Start(t)
	n := newNode(t, srv, "node-e2e")
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	hostDir := t.TempDir()

	web := busybox("web", "echo web starting; httpd -f -p 8080 -h /data")
	web.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	web.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "host", MountPath: "/host"}}
	web.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/index.html", Port: intstr.FromString("http")}}, PeriodSeconds: 1}
	web.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	web.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo prestop-ran > /host/prestop"}}}}
	web.Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("16Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	side := busybox("sidecar", "cat /shared/index.html; grep -q ' /mem tmpfs ' /proc/mounts && echo mem-is-tmpfs; echo sidecar-ready; trap 'exit 0' TERM; while true; do sleep 1; done")
	side.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/shared"}, {Name: "mem", MountPath: "/mem"}}
	side.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/shared/index.html"}}}, PeriodSeconds: 1}
	init := busybox("init", "echo hello-from-init > /data/index.html")
	init.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	dirType := v1.HostPathDirectory
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      n.name,
			InitContainers:                []v1.Container{init},
			Containers:                    []v1.Container{web, side},
			TerminationGracePeriodSeconds: int64p(20),
			Volumes: []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir, Type: &dirType}}},
			},
		},
	}
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	manifest, err := yaml.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(mf, manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "apply", "-f", mf)
	p := waitPod(t, srv.Client, "default", "web", "Running and Ready", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && podReady(p) })
	if p.Status.PodIP == "" || len(p.Status.PodIPs) != 1 || p.Status.HostIP != "127.0.0.1" || p.Status.StartTime == nil {
		t.Errorf("addresses in status: %+v", p.Status)
	}
	for _, ct := range []v1.PodConditionType{v1.PodScheduled, v1.PodReadyToStartContainers, v1.PodInitialized, v1.ContainersReady, v1.PodReady} {
		if condition(p, ct) != v1.ConditionTrue {
			t.Errorf("condition %s = %q", ct, condition(p, ct))
		}
	}
	if ics := p.Status.InitContainerStatuses; len(ics) != 1 || ics[0].State.Terminated == nil || ics[0].State.Terminated.Reason != "Completed" {
		t.Errorf("init container status %+v", ics)
	}
	for _, name := range []string{"web", "sidecar"} {
		cs := containerStatus(p, name)
		if cs == nil || cs.State.Running == nil || !cs.Ready || cs.RestartCount != 0 || !strings.HasPrefix(cs.ContainerID, "containerd://") {
			t.Errorf("container %s status %+v", name, cs)
		}
	}

	// The sidecar read what the init container wrote into the shared emptyDir.
	code, body := kubeletGet(t, srv, n, "/containerLogs/default/web/sidecar")
	if code != 200 || !strings.Contains(body, "hello-from-init") || !strings.Contains(body, "mem-is-tmpfs") {
		t.Errorf("sidecar logs: %d %q", code, body)
	}
	if code, body := kubeletGet(t, srv, n, "/containerLogs/default/web/sidecar?tailLines=1"); code != 200 || body != "sidecar-ready\n" {
		t.Errorf("sidecar logs with tailLines=1: %d %q", code, body)
	}
	if code, _ := kubeletGet(t, srv, n, "/containerLogs/default/web/nope"); code != 400 {
		t.Errorf("logs of a missing container: %d", code)
	}
	// The same through the API server's pods/log proxy, with kubectl.
	if out := kubectl(t, srv, "logs", "web", "-c", "web"); !strings.Contains(out, "web starting") {
		t.Errorf("kubectl logs -c web: %q", out)
	}
	if out := kubectl(t, srv, "logs", "web", "-c", "sidecar", "--tail", "1"); out != "sidecar-ready\n" {
		t.Errorf("kubectl logs --tail 1: %q", out)
	}
	if out := kubectl(t, srv, "get", "pod", "web", "--no-headers"); !strings.Contains(out, "2/2") || !strings.Contains(out, "Running") {
		t.Errorf("kubectl get pod: %q", out)
	}

	// A second pod reaches the first by pod IP over the bridge.
	client := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{busybox("wget", "wget -q -O- http://"+p.Status.PodIP+":8080/index.html")}},
	}
	if _, err := pods.Create(ctx, client, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp := waitPod(t, srv.Client, "default", "client", "finished", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	if cp.Status.Phase != v1.PodSucceeded {
		t.Errorf("client pod %s: %+v", cp.Status.Phase, cp.Status.ContainerStatuses)
	}
	if code, body := kubeletGet(t, srv, n, "/containerLogs/default/client/wget"); code != 200 || body != "hello-from-init\n" {
		t.Errorf("client got %d %q from the web pod", code, body)
	}
	if cs := containerStatus(cp, "wget"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Errorf("client container status %+v", cs)
	}

	// Deletion with a grace period: preStop, SIGTERM, teardown, final delete.
	kubectl(t, srv, "delete", "pod", "web", "--grace-period", "10", "--wait=false")
	if err := pods.Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web", "client"} {
		for i := 0; ; i++ {
			_, err := pods.Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			if i > 600 {
				t.Fatalf("pod %s never deleted: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if b, err := os.ReadFile(filepath.Join(hostDir, "prestop")); err != nil || string(b) != "prestop-ran\n" {
		t.Errorf("preStop hook not observed: %q %v", b, err)
	}
	evs, err := srv.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "web").String()})
	if err == nil {
		seen := map[string]bool{}
		for _, e := range evs.Items {
			seen[e.Reason] = true
		}
		for _, r := range []string{"Pulled", "Created", "Started", "Killing"} {
			if !seen[r] {
				t.Errorf("no %s event for pod web (saw %v)", r, seen)
			}
		}
	} else {
		t.Errorf("list events: %v", err)
	}
	assertNoTrace(t, n)
}

func TestRestartBackOffLivenessAndOOM(t *testing.T) {
	srv := apiservertest.Start(t)
	n := newNode(t, srv, "node-crash")
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	crash := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1),
			Containers: []v1.Container{busybox("crash", "echo attempt; echo crashed-on-purpose > /dev/termination-log; exit 3")}},
	}
	crash.Spec.Containers[0].TerminationMessagePath = "/dev/termination-log"
	oom := busybox("oom", "echo filling; head -c 200m /dev/zero | tail")
	oom.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("20Mi")}
	oom.TerminationMessagePath, oom.TerminationMessagePolicy = "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError
	oomPod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "oom", Namespace: "default"},
		Spec:       v1.PodSpec{NodeName: n.name, RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{oom}},
	}
	live := busybox("live", "touch /tmp/alive; sleep 2; rm /tmp/alive; sleep 1000")
	live.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"test", "-f", "/tmp/alive"}}}, PeriodSeconds: 1, FailureThreshold: 1}
	livePod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "live", Namespace: "default"},
		Spec:       v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(1), Containers: []v1.Container{live}},
	}
	talker := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "talker", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{busybox("talk", "echo one; sleep 2; echo two")}},
	}
	nopull := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nopull", Namespace: "default"},
		Spec:       v1.PodSpec{NodeName: n.name, Containers: []v1.Container{{Name: "c", Image: "127.0.0.1:1/none:v1", ImagePullPolicy: v1.PullIfNotPresent}}},
	}
	for _, p := range []*v1.Pod{crash, oomPod, livePod, talker, nopull} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, srv.Client, "default", "talker", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	// follow streams until the container exits, then the answer ends.
	if code, body := kubeletGet(t, srv, n, "/containerLogs/default/talker/talk?follow=true"); code != 200 || body != "one\ntwo\n" {
		t.Errorf("followed logs: %d %q", code, body)
	}
	p := waitPod(t, srv.Client, "default", "crash", "in CrashLoopBackOff", func(p *v1.Pod) bool {
		cs := containerStatus(p, "crash")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	cs := containerStatus(p, "crash")
	if cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 ||
		cs.LastTerminationState.Terminated.Reason != "Error" || cs.LastTerminationState.Terminated.Message != "crashed-on-purpose\n" {
		t.Errorf("crash status %+v", cs)
	}
	if !strings.Contains(cs.State.Waiting.Message, "back-off 10s") {
		t.Errorf("first back-off should be 10s: %q", cs.State.Waiting.Message)
	}
	if p.Status.Phase != v1.PodRunning {
		t.Errorf("a crash-looping pod with restartPolicy Always is Running, got %s", p.Status.Phase)
	}
	code, body := kubeletGet(t, srv, n, "/containerLogs/default/crash/crash?previous=true")
	if code != 200 || body != "attempt\n" {
		t.Errorf("previous logs: %d %q", code, body)
	}

	op := waitPod(t, srv.Client, "default", "oom", "failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if cs := containerStatus(op, "oom"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.Reason != "OOMKilled" || !strings.HasPrefix(cs.State.Terminated.Message, "filling\n") {
		t.Errorf("oom container status %+v", cs)
	}
	waitPod(t, srv.Client, "default", "nopull", "in ImagePullBackOff", func(p *v1.Pod) bool {
		cs := containerStatus(p, "c")
		return cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason == "ImagePullBackOff"
	})
	lp := waitPod(t, srv.Client, "default", "live", "restarted by its liveness probe", func(p *v1.Pod) bool {
		cs := containerStatus(p, "live")
		return cs != nil && cs.RestartCount >= 1
	})
	if cs := containerStatus(lp, "live"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("live container restarted without a recorded termination: %+v", cs)
	}
	evs, err := srv.Client.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "live").String()})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range evs.Items {
		seen[e.Reason] = true
	}
	if !seen["Unhealthy"] || !seen["Killing"] {
		t.Errorf("liveness failure events missing: %v", seen)
	}
	for _, name := range []string{"crash", "oom", "live", "talker", "nopull"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"crash", "oom", "live", "talker", "nopull"} {
		for i := 0; ; i++ {
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			if i > 600 {
				t.Fatalf("pod %s never deleted", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	assertNoTrace(t, n)
}

func TestKubeletRestartAdoptsRunningPods(t *testing.T) {
	srv := apiservertest.Start(t)
	n := &node{name: "node-restart", root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	startKubelet(t, srv, n, false)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "steady", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(2),
			Containers: []v1.Container{busybox("app", "echo up; trap 'exit 0' TERM; while true; do sleep 1; done")}},
	}
	orphan := pod.DeepCopy()
	orphan.Name = "orphan"
	for _, p := range []*v1.Pod{pod, orphan} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := waitPod(t, srv.Client, "default", "steady", "Ready", podReady)
	orphanPod := waitPod(t, srv.Client, "default", "orphan", "Ready", podReady)
	n.stop()
	// While no kubelet runs, one pod is force-deleted: its sandbox is an orphan now.
	if err := pods.Delete(ctx, "orphan", metav1.DeleteOptions{GracePeriodSeconds: int64p(0)}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, srv, "orphan")
	ipFile := filepath.Join(n.root, "cni", "ipam", "wasmkube", orphanPod.Status.PodIP)
	if _, err := os.Stat(ipFile); err != nil {
		t.Fatalf("the orphan's IP should still be allocated before the restart: %v", err)
	}

	// Pods keep running while no kubelet watches them.
	net, err := cni.New(n.net)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.NewContainerd(ctx, runtime.ContainerdOptions{Address: n.daemon.Address(), Namespace: n.name, RootDir: t.TempDir(), Network: net})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := rt.ListContainers(ctx, string(before.UID))
	rt.Close()
	if err != nil || len(cs) != 1 || cs[0].State != runtime.ContainerRunning {
		t.Fatalf("container after kubelet stop: %+v %v", cs, err)
	}
	startKubelet(t, srv, n, true)
	// Give the new kubelet a reason to write status, then check it adopted, not restarted.
	if _, err := pods.Patch(ctx, "steady", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"touched":"yes"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	after := waitPod(t, srv.Client, "default", "steady", "seen by the new kubelet", func(p *v1.Pod) bool {
		return p.Labels["touched"] == "yes" && podReady(p)
	})
	b, a := containerStatus(before, "app"), containerStatus(after, "app")
	if a.ContainerID != b.ContainerID || a.RestartCount != 0 || a.State.Running == nil || !a.State.Running.StartedAt.Equal(&b.State.Running.StartedAt) {
		t.Errorf("container not adopted: before %+v after %+v", b, a)
	}
	if after.Status.PodIP != before.Status.PodIP {
		t.Errorf("pod IP changed from %s to %s", before.Status.PodIP, after.Status.PodIP)
	}
	// The restarted kubelet removes the orphan: containers gone, CNI DEL released its IP.
	for i := 0; ; i++ {
		cs, err := n.kubelet.Runtime().ListContainers(ctx, string(orphanPod.UID))
		if err == nil && len(cs) == 0 {
			break
		}
		if i > 300 {
			t.Fatalf("orphan's containers after restart: %+v %v", cs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := os.Stat(ipFile); !os.IsNotExist(err) {
		t.Errorf("orphan's IP %s not released: %v", orphanPod.Status.PodIP, err)
	}
	if err := pods.Delete(ctx, "steady", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if _, err := pods.Get(ctx, "steady", metav1.GetOptions{}); apierrors.IsNotFound(err) {
			break
		}
		if i > 600 {
			t.Fatal("pod never deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	assertNoTrace(t, n)
}

// logLevel is warn unless WASMKUBE_TEST_LOG=debug asks for the kubelet's step timings.
func logLevel() slog.Level {
	if os.Getenv("WASMKUBE_TEST_LOG") == "debug" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func envInt(name string) int {
	n, _ := strconv.Atoi(os.Getenv(name))
	return n
}

// containerd dies under a running kubelet: the daemon is restarted, running pods are not
// touched, and new pods start on the restarted daemon.
func TestContainerdCrashIsSurvived(t *testing.T) {
	srv := apiservertest.Start(t)
	n := newNode(t, srv, "node-ctrd-crash")
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	mk := func(name string) {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(2),
				Containers: []v1.Container{busybox("app", "trap 'exit 0' TERM; while true; do sleep 1; done")}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("before")
	a := waitPod(t, srv.Client, "default", "before", "Ready", podReady)
	if err := syscall.Kill(n.daemon.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; n.daemon.Restarts() == 0; i++ {
		if i > 600 {
			t.Fatal("containerd was not restarted")
		}
		time.Sleep(50 * time.Millisecond)
	}
	mk("after")
	waitPod(t, srv.Client, "default", "after", "Ready", podReady)
	a2, err := pods.Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, c := containerStatus(a, "app"), containerStatus(a2, "app"); c.ContainerID != b.ContainerID || c.RestartCount != 0 || c.State.Running == nil {
		t.Errorf("running pod disturbed by the daemon crash: before %+v after %+v", b, c)
	}
	for _, name := range []string{"before", "after"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitGone(t, srv, "before")
	waitGone(t, srv, "after")
	assertNoTrace(t, n)
}
