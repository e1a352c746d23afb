package kubelet_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// hooksNode is a real kubelet whose config file declares wasm hook plugins; the modules
// are copied beside the config, as an operator would keep them.
type hooksNode struct {
	*node
	dir, config string
	reg         *prometheus.Registry
}

func newHooksNode(t *testing.T, srv *apiservertest.Server, name, configYAML string, modules map[string]string) *hooksNode {
	t.Helper()
	hn := &hooksNode{dir: t.TempDir(), reg: prometheus.NewRegistry()}
	for dst, src := range modules {
		copyModule(t, src, filepath.Join(hn.dir, dst))
	}
	hn.config = filepath.Join(hn.dir, "wasmkube.yaml")
	if err := os.WriteFile(hn.config, []byte(configYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks := newTestHooks(t, hn.reg)
	n := newUnstartedNode(t, name, func(o *kubelet.Options) { o.ConfigFile, o.Hooks, o.Registerer = hn.config, hooks, hn.reg })
	startKubelet(t, srv, n, true)
	hn.node = n
	return hn
}

// newTestHooks is the kubelet's wasm host and hook plugins, as cmd/wasmkube builds them.
func newTestHooks(t testing.TB, reg prometheus.Registerer) *nodewasm.Hooks {
	t.Helper()
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}, CacheDir: t.TempDir(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	hooks := nodewasm.New(host, nil)
	t.Cleanup(hooks.Close)
	return hooks
}

// newUnstartedNode is a node on a containerd of its own whose kubelet gets options.
func newUnstartedNode(t testing.TB, name string, options func(*kubelet.Options)) *node {
	t.Helper()
	n := &node{name: name, root: t.TempDir(), daemon: nodetest.Containerd(t), options: options}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	return n
}

func copyModule(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed, as an editor or a ConfigMap update replaces a file.
	if err := os.WriteFile(to+".tmp", b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// shPod is a pod of one busybox container running script under sh, which exits on
// SIGTERM (a shell as PID 1 would ignore it and wait for SIGKILL).
func shPod(name, node, container, script string) *v1.Pod {
	c := busybox(container, "trap 'exit 0' TERM; "+script+"; sleep 100000 & wait")
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: map[string]string{}},
		Spec: v1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: int64p(1), Containers: []v1.Container{c}}}
}

// httpGetHandler is the ordinary probe the manifest keeps (the plugin replaces it here).
func httpGetHandler(port int32) v1.ProbeHandler {
	return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(port)}}
}

// eventsOf returns the events recorded on the object named name.
func eventsOf(t *testing.T, c kubernetes.Interface, ns, name string) []v1.Event {
	t.Helper()
	evs, err := c.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// waitEvent waits for an event on name with reason whose message contains text.
func waitEvent(t *testing.T, c kubernetes.Interface, ns, name, reason, text string) v1.Event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		for _, e := range eventsOf(t, c, ns, name) {
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return e
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	var seen []string
	for _, e := range eventsOf(t, c, ns, name) {
		seen = append(seen, e.Reason+": "+e.Message)
	}
	t.Fatalf("no %s event containing %q on %s; events:\n%s", reason, text, name, strings.Join(seen, "\n"))
	return v1.Event{}
}

// deleteAndWait deletes a pod of the default namespace and returns how long it took to be
// gone from the API.
func deleteAndWait(t testing.TB, c kubernetes.Interface, name string, grace int64) time.Duration {
	t.Helper()
	return deleteAndWaitIn(t, c, "default", name, grace)
}

func deleteAndWaitIn(t testing.TB, c kubernetes.Interface, ns, name string, grace int64) time.Duration {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	if err := c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return time.Since(start)
		}
		if time.Since(start) > time.Duration(grace)*time.Second+30*time.Second {
			t.Fatalf("pod %s not gone %s after its deletion", name, time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

const hooksConfig = `
scheduler: {}
kubelet:
  hookPlugins:
  - name: health
    path: health.wasm
    args: 8080
  - name: live
    path: health.wasm
    args: 8081
    timeout: 1s
  - name: drain
    path: health.wasm
    args: 8080
  selectors:
  - {plugin: health, kind: readiness, namespaceSelector: {matchLabels: {wasm: "on"}}}
`

// TestWasmHooksOnARealKubelet: a readiness plugin follows a file that busybox httpd
// serves in the pod; a liveness plugin restarts a container; a drain preStop waits for
// the pod's in-flight count to reach 0, and when it never does, termination still ends at
// the grace period. Editing the config swaps the readiness logic of the running pod, and a
// broken module keeps the last good one.
func TestWasmHooksOnARealKubelet(t *testing.T) {
	srv := apiservertest.Start(t)
	health := wasmbuild.WAT(t, "plugins/nodewasm/testdata/get.wat")
	hn := newHooksNode(t, srv, "node-hooks", hooksConfig, map[string]string{"health.wasm": health})
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")

	ready := shPod("ready", hn.name, "web", "mkdir -p /www; echo warming > /www/health; httpd -p 8080 -h /www; sleep 4; echo ok > /www/health")
	ready.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: httpGetHandler(8080), PeriodSeconds: 1}
	ready.Annotations[nodewasm.Annotation("readiness", "web")] = "health"

	live := shPod("live", hn.name, "c", "mkdir -p /l; echo ok > /l/health; httpd -p 8081 -h /l; sleep 3; echo dead > /l/health")
	live.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: httpGetHandler(8081), PeriodSeconds: 1, FailureThreshold: 1}
	live.Annotations[nodewasm.Annotation("liveness", "c")] = "live"

	// The drain endpoint is a CGI script that sets the in-flight count to 0 two seconds
	// after it was called; the stuck pod's never does.
	drainScript := func(flip bool) string {
		after := ""
		if flip {
			after = `(sleep 2; printf 0 > /www/inflight.new; mv /www/inflight.new /www/inflight) >/dev/null 2>&1 &`
		}
		return `mkdir -p /www/cgi-bin; printf 1 > /www/inflight; ` +
			`printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho draining\n` + after + `\n' > /www/cgi-bin/drain; ` +
			`chmod +x /www/cgi-bin/drain; httpd -p 8080 -h /www`
	}
	drain := shPod("drain", hn.name, "c", drainScript(true))
	stuck := shPod("stuck", hn.name, "c", drainScript(false))
	for _, p := range []*v1.Pod{drain, stuck} {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "1"}}}}
		p.Annotations[nodewasm.Annotation("prestop", "c")] = "drain"
	}
	drain.Spec.TerminationGracePeriodSeconds = int64p(20)
	stuck.Spec.TerminationGracePeriodSeconds = int64p(3)

	// A plugin nobody declared: a warning, and the probe neither passes nor fails.
	missing := shPod("missing", hn.name, "web", "mkdir -p /www; echo ok > /www/health; httpd -p 8080 -h /www")
	missing.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: httpGetHandler(8080), PeriodSeconds: 1}
	missing.Annotations[nodewasm.Annotation("readiness", "web")] = "no-such-plugin"

	// A selector attaches health to the readiness probes of namespaces labelled wasm=on: the
	// spec's exec probe (false) would never pass, the plugin does.
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "sel", Labels: map[string]string{"wasm": "on"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	selected := shPod("selected", hn.name, "web", "mkdir -p /www; echo ok > /www/health; httpd -p 8080 -h /www")
	selected.Namespace = "sel"
	selected.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 1}

	for _, p := range []*v1.Pod{ready, live, drain, stuck, missing, selected} {
		if _, err := srv.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitEvent(t, srv.Client, "default", "missing", "WasmHookMissing", `wasm plugin "no-such-plugin" (named by annotation hooks.wasmkube.io/readiness.web) is not declared`)
	waitPod(t, srv.Client, "sel", "selected", "Ready through the selector's plugin", podReady)
	waitEvent(t, srv.Client, "sel", "selected", "WasmHook", "by kubelet.selectors[0]")

	// Readiness follows the file: not ready while it says "warming" (with the plugin's
	// reason in the Unhealthy event), ready once it says "ok".
	waitEvent(t, srv.Client, "default", "ready", "WasmHook", "Readiness probe of container web is served by wasm plugin health")
	waitEvent(t, srv.Client, "default", "ready", "Unhealthy", "Readiness probe failed: wasm plugin health: body not ok")
	rp := waitPod(t, srv.Client, "default", "ready", "Ready", podReady)
	firstID := containerStatus(rp, "web").ContainerID
	// kubectl describe shows which plugin serves the probe, and the plugin's reason.
	desc := kubectl(t, srv, "describe", "pod", "ready")
	for _, want := range []string{"hooks.wasmkube.io/readiness.web: health", "served by wasm plugin health", "wasm plugin health: body not ok"} {
		if !strings.Contains(desc, want) {
			t.Errorf("kubectl describe pod ready lacks %q:\n%s", want, desc)
		}
	}

	// Liveness: the file turns "dead" after 3 s and the plugin's failure restarts it.
	waitPod(t, srv.Client, "default", "live", "restarted by its wasm liveness probe", func(p *v1.Pod) bool {
		cs := containerStatus(p, "c")
		return cs != nil && cs.RestartCount >= 1
	})
	waitEvent(t, srv.Client, "default", "live", "Unhealthy", "Liveness probe failed: wasm plugin live: body not ok")
	waitEvent(t, srv.Client, "default", "live", "Killing", "failed liveness probe")

	// The drain preStop waits for in-flight work (2 s) and no longer.
	waitPod(t, srv.Client, "default", "drain", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	waitPod(t, srv.Client, "default", "stuck", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	waitEvent(t, srv.Client, "default", "drain", "WasmHook", "PreStop hook of container c is served by wasm plugin drain")
	took := deleteAndWait(t, srv.Client, "drain", 20)
	t.Logf("drain pod (2 s drain, 20 s grace) terminated in %s", took)
	if took < 2*time.Second || took > 15*time.Second {
		t.Errorf("drain pod terminated in %s: want the 2 s drain, far from the 20 s grace period", took)
	}
	for _, e := range eventsOf(t, srv.Client, "default", "drain") {
		if e.Reason == "FailedPreStopHook" {
			t.Errorf("drain: %s", e.Message)
		}
	}
	// The stuck drain is cut at the grace period (3 s), with the plugin's failure.
	took = deleteAndWait(t, srv.Client, "stuck", 3)
	t.Logf("stuck pod (drain never done, 3 s grace) terminated in %s", took)
	if took > 3*time.Second+5*time.Second {
		t.Errorf("stuck pod terminated in %s with a grace period of 3 s", took)
	}
	waitEvent(t, srv.Client, "default", "stuck", "FailedPreStopHook", "wasm plugin drain failed (timeout)")

	// prober_probe_total counts the wasm probes.
	if n := (probeCounter(t, hn.reg, "Readiness", "successful", "web", "ready")); n < 1 {
		t.Errorf("prober_probe_total{probe_type=Readiness,result=successful,pod=ready} = %v", n)
	}

	// Live swap: the health plugin becomes req.wat, which fails every probe with the HTTP
	// status as its reason. The running pod turns NotReady without a restart.
	copyModule(t, wasmbuild.WAT(t, "plugins/nodewasm/testdata/req.wat"), filepath.Join(hn.dir, "req.wasm"))
	swapped := strings.Replace(hooksConfig, "  - name: health\n    path: health.wasm\n    args: 8080\n",
		"  - name: health\n    path: req.wasm\n    args: \"8080 /health\"\n", 1)
	if err := os.WriteFile(hn.config, []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, srv.Client, "default", "ready", "Unhealthy", "Readiness probe failed: wasm plugin health: 200")
	rp = waitPod(t, srv.Client, "default", "ready", "NotReady after the swap", func(p *v1.Pod) bool { return !podReady(p) })
	if cs := containerStatus(rp, "web"); cs.ContainerID != firstID || cs.RestartCount != 0 {
		t.Errorf("the swap restarted the container: %+v", cs)
	}
	// A broken module: the last good one stays, with an event on the Node and a metric.
	if err := os.WriteFile(filepath.Join(hn.dir, "broken.wasm"), []byte("not wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(swapped, "path: req.wasm", "path: broken.wasm", 1)
	if err := os.WriteFile(hn.config, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, srv.Client, "", hn.name, "FailedConfigReload", "kubelet.hookPlugins[0]")
	if n := (reloadCounter(t, hn.reg, "failure")); n < 1 {
		t.Errorf("wasmkube_kubelet_config_reloads_total{result=failure} = %v", n)
	}
	before := (probeCounter(t, hn.reg, "Readiness", "failed", "web", "ready"))
	time.Sleep(2 * time.Second)
	if after := (probeCounter(t, hn.reg, "Readiness", "failed", "web", "ready")); after <= before {
		t.Errorf("readiness probes stopped after a broken reload (%v then %v failures)", before, after)
	}
	if mp, err := pods.Get(ctx, "missing", metav1.GetOptions{}); err != nil || podReady(mp) {
		t.Errorf("the pod naming a missing plugin is Ready (%v)", err)
	}
	for _, e := range eventsOf(t, srv.Client, "default", "missing") {
		if e.Reason == "Unhealthy" {
			t.Errorf("a missing plugin failed the probe: %s", e.Message)
		}
	}
	for _, name := range []string{"ready", "live", "missing"} {
		deleteAndWait(t, srv.Client, name, 1)
	}
	deleteAndWaitIn(t, srv.Client, "sel", "selected", 1)
	assertNoTrace(t, hn.node)
}

func probeCounter(t *testing.T, reg *prometheus.Registry, kind, result, container, pod string) float64 {
	t.Helper()
	return seriesOf(t, reg, "prober_probe_total", map[string]string{"probe_type": kind, "result": result, "container": container, "pod": pod, "namespace": "default"})
}

func reloadCounter(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return seriesOf(t, reg, "wasmkube_kubelet_config_reloads_total", map[string]string{"result": result})
}

// seriesOf sums the counter series of reg named name with labels (0 if absent).
func seriesOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

const stuckDrainConfig = `
kubelet:
  hookPlugins:
  - name: drain-wat
    path: drain.wasm
    args: 8080
  - name: drain-go
    path: drain-prestop.wasm
    args: {port: 8080, drainPath: /cgi-bin/drain, inflightPath: /inflight, intervalMs: 500}
`

// TestWasmPreStopHeldToGraceDeadline: pods whose wasm preStop never finishes (the pod's
// in-flight count never reaches 0) and whose container ignores SIGTERM, deleted together
// with a 6 s grace period; one hook is a WAT module, the other the Go example
// wasm-examples/go/drain-prestop. The grace period is a promise: the hook reaches the pod
// first, is cut at the deadline (FailedPreStopHook), the container is killed with SIGKILL
// (exit 137) not before the deadline, and the pod's status says so before the kubelet
// completes the deletion (a finalizer of the test keeps the object to read it). A third pod,
// deleted with 60 s and then with 2 s while its hook runs, is killed by the shorter deadline
// without its hook running again.
func TestWasmPreStopHeldToGraceDeadline(t *testing.T) {
	srv := apiservertest.Start(t)
	dir := t.TempDir()
	copyModule(t, wasmbuild.WAT(t, "plugins/nodewasm/testdata/get.wat"), filepath.Join(dir, "drain.wasm"))
	copyModule(t, wasmbuild.Go(t, "wasm-examples/go/drain-prestop"), filepath.Join(dir, "drain-prestop.wasm"))
	config := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(config, []byte(stuckDrainConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	hooks := newTestHooks(t, reg)
	n := newUnstartedNode(t, "node-grace", func(o *kubelet.Options) { o.ConfigFile, o.Hooks, o.Registerer = config, hooks, reg })
	n.net.Bridge, n.net.PodCIDR = "wkh3br0", "10.63.0.0/24"
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "wkh3br0").Run() })
	startKubelet(t, srv, n, true)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")

	// Each container records what reaches it in a host file: the drain request (its CGI
	// script) and SIGTERM, which it ignores.
	cases := []struct{ pod, plugin, failure, host string }{
		{"stuck-wat", "drain-wat", "wasm plugin drain-wat failed (timeout)", t.TempDir()},
		// The Go guest reports "drain: 1 request(s) still in flight when the grace period ran
		// out" just before the limit, or on a loaded machine is cut at it (timeout).
		{"stuck-go", "drain-go", "wasm plugin drain-go failed (", t.TempDir()},
		// Deleted with 60 s, then again with 2 s once its hook runs (below).
		{"shortened", "drain-wat", "", t.TempDir()},
	}
	script := `trap 'echo TERM >> /host/events' TERM; mkdir -p /www/cgi-bin; printf 1 > /www/inflight; ` +
		`printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho draining\necho drain >> /host/events\n' > /www/cgi-bin/drain; ` +
		`chmod +x /www/cgi-bin/drain; httpd -p 8080 -h /www; while true; do sleep 100000 & wait; done`
	for _, tc := range cases {
		c := busybox("c", script)
		c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "1"}}}}
		c.VolumeMounts = []v1.VolumeMount{{Name: "host", MountPath: "/host"}}
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Namespace: "default", Finalizers: []string{"test.wasmkube.io/hold"},
				Annotations: map[string]string{nodewasm.Annotation("prestop", "c"): tc.plugin}},
			Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(6), Containers: []v1.Container{c},
				Volumes: []v1.Volume{{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.host}}}}},
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		waitPod(t, srv.Client, "default", tc.pod, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		waitEvent(t, srv.Client, "default", tc.pod, "WasmHook", "PreStop hook of container c is served by wasm plugin "+tc.plugin)
	}

	// A deletion with a shorter grace period while the kill is under way restarts it with
	// that deadline, as upstream's kubelet; the hook that already ran does not run again.
	if err := pods.Delete(ctx, "shortened", metav1.DeleteOptions{GracePeriodSeconds: int64p(60)}); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if b, _ := os.ReadFile(filepath.Join(cases[2].host, "events")); strings.Contains(string(b), "drain") {
			break
		}
		if i > 300 {
			t.Fatal("the shortened pod's preStop never reached it")
		}
		time.Sleep(100 * time.Millisecond)
	}
	first, err := pods.Get(ctx, "shortened", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	deadlines := map[string]time.Time{}
	for _, tc := range cases {
		opts := metav1.DeleteOptions{}
		if tc.pod == "shortened" {
			opts.GracePeriodSeconds = int64p(2)
		}
		if err := pods.Delete(ctx, tc.pod, opts); err != nil {
			t.Fatal(err)
		}
		// deletionTimestamp is the request's time plus the grace period, in whole
		// seconds (the kubelet's final delete moves it to its own time).
		p, err := pods.Get(ctx, tc.pod, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp == nil {
			t.Fatalf("pod %s after its deletion: %v", tc.pod, err)
		}
		deadlines[tc.pod] = p.DeletionTimestamp.Time
	}
	for _, tc := range cases {
		// The kubelet completes the deletion (grace 0) once the pod is torn down; the
		// finalizer keeps the object.
		done := waitPod(t, srv.Client, "default", tc.pod, "deleted by its kubelet", func(p *v1.Pod) bool {
			return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
		})
		took := time.Since(start)
		t.Logf("%s (preStop never done, SIGTERM ignored, 6 s grace) torn down and deleted by %s after the deletions", tc.pod, took)
		cs := containerStatus(done, "c")
		if cs == nil || cs.State.Terminated == nil {
			t.Fatalf("%s: container status before the final delete: %+v, want terminated", tc.pod, cs)
		}
		term := cs.State.Terminated
		if term.ExitCode != 137 {
			t.Errorf("%s: container exited with %d (%s), want 137: killed by SIGKILL at the deadline", tc.pod, term.ExitCode, term.Reason)
		}
		if term.FinishedAt.Time.Before(deadlines[tc.pod]) {
			t.Errorf("%s: container killed at %s, before the grace deadline %s", tc.pod, term.FinishedAt.Format(time.RFC3339), deadlines[tc.pod].Format(time.RFC3339))
		}
		// The hook reached the pod before any signal, and was cut at the deadline.
		b, err := os.ReadFile(filepath.Join(tc.host, "events"))
		if err != nil {
			t.Fatal(err)
		}
		if lines := strings.Fields(string(b)); len(lines) == 0 || lines[0] != "drain" || strings.Count(string(b), "drain") != 1 {
			t.Errorf("%s: what reached the container: %q, want the drain request first, once", tc.pod, lines)
		}
		if tc.pod == "shortened" {
			if !term.FinishedAt.Time.Before(first.DeletionTimestamp.Time) {
				t.Errorf("shortened: killed at %s, not before the first deletion's deadline %s", term.FinishedAt.Format(time.RFC3339), first.DeletionTimestamp.Format(time.RFC3339))
			}
			continue
		}
		waitEvent(t, srv.Client, "default", tc.pod, "FailedPreStopHook", tc.failure)
		// Loose: the promise is SIGKILL at 6 s and the pod gone a couple of seconds
		// later; only a far miss fails here.
		if took > 6*time.Second+15*time.Second {
			t.Errorf("%s torn down %s after its deletion with a 6 s grace period", tc.pod, took)
		}
	}

	for _, tc := range cases {
		p, err := pods.Get(ctx, tc.pod, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Finalizers = nil
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if _, err := pods.Get(ctx, tc.pod, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				break
			}
			if i > 300 {
				t.Fatalf("%s never gone after its finalizer was removed", tc.pod)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	assertNoTrace(t, n)
}
