package kubelet_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/hook"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// latencies records how long each probe of the running phase took.
type latencies struct {
	mu   sync.Mutex
	on   bool
	durs []time.Duration
	fail int
}

func (l *latencies) start() { l.mu.Lock(); l.on, l.durs, l.fail = true, nil, 0; l.mu.Unlock() }

func (l *latencies) stop() ([]time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.durs, l.fail
}

// timedHooks wraps the kubelet's hook plugins so that every probe, wasm or built-in, is
// timed as the kubelet's probe loop sees it.
type timedHooks struct {
	kubelet.HookPlugins
	rec *latencies
}

func (h timedHooks) Runners(p probe.Prober, s hook.PreStopRunner, ns func(context.Context, string) (map[string]string, error)) (probe.Prober, hook.PreStopRunner) {
	pr, ps := h.HookPlugins.Runners(p, s, ns)
	return timedProber{pr, h.rec}, ps
}

type timedProber struct {
	probe.Prober
	rec *latencies
}

func (t timedProber) Probe(ctx context.Context, tg probe.Target, h *v1.ProbeHandler) (probe.Result, string, error) {
	start := time.Now()
	r, msg, err := t.Prober.Probe(ctx, tg, h)
	d := time.Since(start)
	t.rec.mu.Lock()
	if t.rec.on {
		t.rec.durs = append(t.rec.durs, d)
		if r != probe.Success {
			t.rec.fail++
		}
	}
	t.rec.mu.Unlock()
	return r, msg, err
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// podsCPU is the CPU time used so far by the node's containers (cgroup v1 cpuacct of the
// containerd namespace, which is the node's name), 0 if it cannot be read.
func podsCPU(node string) time.Duration {
	v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", node, "cpuacct.usage"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
	return time.Duration(n)
}

const probeBenchConfig = `
kubelet:
  hookPlugins:
  - name: json-health
    path: json-health-probe.wasm
    args: {"port": 8080, "path": "/health", "field": "status", "value": "ok"}
  - name: drain
    path: drain-prestop.wasm
    args: {"port": 8080, "drainPath": "/cgi-bin/drain", "inflightPath": "/inflight", "intervalMs": 500}
`

// BenchmarkProbeCPU runs WASMKUBE_BENCH_PODS pods (default 50) with a readiness probe every
// second on a real kubelet with containerd, and measures for WASMKUBE_BENCH_SECONDS
// (default 20) each: the node idle (the same number of pods without probes), the exec
// probe of the manifest (sh -c 'wget -qO- .../health | grep -q ...'), and the equivalent
// wasm probe (wasm-examples/go/json-health-probe, attached to the same running pods by a
// selector in the kubelet's config). It reports the CPU of this process's cgroup (the test
// process, whose kubelet, API server and etcd run in process, containerd, the shims and
// runc) per probe above idle, the CPU of the pods' own cgroups per probe (where the exec
// probe's sh, wget and grep run), the probe latency p50/p99 as the kubelet's probe loop
// sees it, and an HTTP GET of the same URL from this process for the round trip. Then it
// deletes pods with a drain preStop (the drain endpoint finishes 2 s after it is called)
// served by an exec hook and by wasm-examples/go/drain-prestop, and reports the
// termination time of each. Not a timed test: run it in a cpuacct cgroup of its own, e.g.
//
//	mkdir -p /sys/fs/cgroup/cpuacct/bench && echo $$ > /sys/fs/cgroup/cpuacct/bench/cgroup.procs
//	go test -run '^$' -bench ProbeCPU -benchtime 1x -timeout 30m ./kubelet/
func BenchmarkProbeCPU(b *testing.B) {
	nPods, secs := 50, 20
	if v := os.Getenv("WASMKUBE_BENCH_PODS"); v != "" {
		nPods, _ = strconv.Atoi(v)
	}
	if v := os.Getenv("WASMKUBE_BENCH_SECONDS"); v != "" {
		secs, _ = strconv.Atoi(v)
	}
	phase := time.Duration(secs) * time.Second
	srv := apiservertest.Start(b)
	dir := b.TempDir()
	copyModule(b, wasmbuild.Go(b, "wasm-examples/go/json-health-probe"), filepath.Join(dir, "json-health-probe.wasm"))
	copyModule(b, wasmbuild.Go(b, "wasm-examples/go/drain-prestop"), filepath.Join(dir, "drain-prestop.wasm"))
	cfgPath := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(cfgPath, []byte(probeBenchConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	rec := &latencies{}
	hooks := newTestHooks(b, nil)
	n := newUnstartedNode(b, "node-probes", func(o *kubelet.Options) {
		o.ConfigFile, o.Hooks = cfgPath, timedHooks{hooks, rec}
	})
	startKubeletB(b, srv, n)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	health := `mkdir -p /www/cgi-bin; echo '{"status": "ok"}' > /www/health; printf 1 > /www/inflight; ` +
		`printf '#!/bin/sh\necho Content-Type: text/plain\necho\necho draining\n(sleep 2; printf 0 > /www/inflight.new; mv /www/inflight.new /www/inflight) >/dev/null 2>&1 &\n' > /www/cgi-bin/drain; ` +
		`chmod +x /www/cgi-bin/drain; httpd -p 8080 -h /www`
	makePods := func(prefix string, probed bool, hookLabel string) []string {
		var names []string
		for i := range nPods {
			name := fmt.Sprintf("%s-%d", prefix, i)
			p := shPod(name, n.name, "web", health)
			p.Labels = map[string]string{"bench": prefix, "hook": hookLabel}
			if probed {
				p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{
					"sh", "-c", `wget -qO- http://127.0.0.1:8080/health | grep -q '"status": *"ok"'`}}}, PeriodSeconds: 1, TimeoutSeconds: 1}
			}
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			names = append(names, name)
		}
		return names
	}
	waitAll := func(prefix string, cond func(*v1.Pod) bool) []*v1.Pod {
		for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"bench": prefix}.String()})
			if err != nil {
				b.Fatal(err)
			}
			var ok []*v1.Pod
			for i := range l.Items {
				if cond(&l.Items[i]) {
					ok = append(ok, &l.Items[i])
				}
			}
			if len(ok) == nPods {
				return ok
			}
		}
		b.Fatalf("pods %s not all there", prefix)
		return nil
	}
	deleteAll := func(names []string) {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			go func() { defer wg.Done(); deleteAndWait(b, srv.Client, name, 1) }()
		}
		wg.Wait()
	}
	type sample struct{ cpu, pods time.Duration }
	measure := func() sample {
		c0, p0 := cgroupCPU(), podsCPU(n.name)
		time.Sleep(phase)
		return sample{cgroupCPU() - c0, podsCPU(n.name) - p0}
	}

	// Idle: the same pods without probes.
	idleNames := makePods("idle", false, "none")
	waitAll("idle", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	time.Sleep(3 * time.Second)
	idle := measure()
	deleteAll(idleNames)

	// Exec probes.
	probeNames := makePods("probe", true, "exec")
	// Running, not necessarily Ready: on a small machine exec probes of 50 pods every second
	// may not all finish within their timeoutSeconds, which is part of what this measures.
	running := waitAll("probe", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" })
	time.Sleep(5 * time.Second)
	countReady := func() int {
		l, _ := pods.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{"bench": "probe"}.String()})
		n := 0
		for i := range l.Items {
			if podReady(&l.Items[i]) {
				n++
			}
		}
		return n
	}
	rec.start()
	execS := measure()
	execD, execFail := rec.stop()
	execReady := countReady()

	// Wasm probes: a selector attaches json-health to the same running pods.
	withSel := probeBenchConfig + "  selectors:\n  - {plugin: json-health, kind: readiness}\n  - {plugin: drain, kind: prestop, podSelector: {matchLabels: {hook: wasm}}}\n"
	if err := os.WriteFile(cfgPath, []byte(withSel), 0o644); err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second) // reload and a period for every probe
	// The HTTP round trip of the same URL from this process, sampled during the wasm
	// phase (the same load on the machine): one GET every 20 ms, pod after pod.
	var rtt []time.Duration
	stopRTT := make(chan struct{})
	rttDone := make(chan struct{})
	go func() {
		defer close(rttDone)
		hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: time.Second}
		for i := 0; ; i++ {
			select {
			case <-stopRTT:
				return
			case <-time.After(20 * time.Millisecond):
			}
			start := time.Now()
			resp, err := hc.Get("http://" + running[i%len(running)].Status.PodIP + ":8080/health")
			if err == nil {
				resp.Body.Close()
				rtt = append(rtt, time.Since(start))
			}
		}
	}()
	rec.start()
	wasmS := measure()
	close(stopRTT)
	<-rttDone
	wasmD, wasmFail := rec.stop()
	wasmReady := countReady()
	deleteAll(probeNames)

	per := func(d time.Duration, probes int) float64 {
		if probes == 0 {
			return 0
		}
		return float64(d.Microseconds()) / 1000 / float64(probes)
	}
	b.Logf("%d pods, readiness every 1s, %s per phase, GOMAXPROCS %d", nPods, phase, goruntime.GOMAXPROCS(0))
	b.Logf("idle:  kubelet+containerd+shims %.0f ms, pods %.0f ms", float64(idle.cpu.Milliseconds()), float64(idle.pods.Milliseconds()))
	for _, r := range []struct {
		name  string
		s     sample
		d     []time.Duration
		fails int
		ready int
	}{{"exec", execS, execD, execFail, execReady}, {"wasm", wasmS, wasmD, wasmFail, wasmReady}} {
		b.Logf("%s: %d probes (%d not successful, %d/%d pods ready at the end): kubelet+containerd+shims %.3f ms/probe above idle (%.3f total), pods %.3f ms/probe above idle; latency p50 %s p99 %s",
			r.name, len(r.d), r.fails, r.ready, nPods, per(r.s.cpu-idle.cpu, len(r.d)), per(r.s.cpu, len(r.d)), per(r.s.pods-idle.pods, len(r.d)),
			quantile(r.d, 0.5).Round(time.Microsecond), quantile(r.d, 0.99).Round(time.Microsecond))
		b.ReportMetric(per(r.s.cpu-idle.cpu, len(r.d)), r.name+"-node-cpu-ms/probe")
		b.ReportMetric(float64(quantile(r.d, 0.99).Microseconds())/1000, r.name+"-p99-ms")
	}
	b.Logf("HTTP GET from the node during the wasm phase: %d, p50 %s p99 %s", len(rtt), quantile(rtt, 0.5).Round(time.Microsecond), quantile(rtt, 0.99).Round(time.Microsecond))

	// preStop: the same drain logic as an exec hook and as the wasm plugin.
	nDrain := min(nPods, 10)
	var execT, wasmT []time.Duration
	for _, kind := range []string{"exec", "wasm"} {
		var names []string
		for i := range nDrain {
			name := fmt.Sprintf("drain-%s-%d", kind, i)
			p := shPod(name, n.name, "web", health)
			p.Labels = map[string]string{"bench": "drain-" + kind, "hook": kind}
			p.Spec.TerminationGracePeriodSeconds = int64p(30)
			p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c",
				`wget -qO- http://127.0.0.1:8080/cgi-bin/drain >/dev/null; while [ "$(wget -qO- http://127.0.0.1:8080/inflight)" != 0 ]; do sleep 0.5; done`}}}}
			if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			names = append(names, name)
		}
		nPodsSave := nPods
		nPods = nDrain
		waitAll("drain-"+kind, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		nPods = nPodsSave
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, name := range names {
			wg.Add(1)
			go func() {
				defer wg.Done()
				d := deleteAndWait(b, srv.Client, name, 30)
				mu.Lock()
				if kind == "exec" {
					execT = append(execT, d)
				} else {
					wasmT = append(wasmT, d)
				}
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	b.Logf("preStop drain (2 s), deletion to pod gone, %d pods each: exec p50 %s max %s; wasm p50 %s max %s", nDrain,
		quantile(execT, 0.5).Round(time.Millisecond), quantile(execT, 1).Round(time.Millisecond),
		quantile(wasmT, 0.5).Round(time.Millisecond), quantile(wasmT, 1).Round(time.Millisecond))
}
