package kubelet_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
)

// TestStatsSummaryFromCgroups runs a busy and an idle pod on a real kubelet with its own
// containerd and reads /stats/summary: each pod and container has cumulative CPU, a CPU rate
// once sampled twice, and a non-zero memory working set read from its cgroup; the busy loop
// uses more CPU than the sleeper, in the summary and in `kubectl top pod` (metrics.k8s.io,
// which the API server answers from the same summary).
func TestStatsSummaryFromCgroups(t *testing.T) {
	srv := apiservertest.Start(t)
	n := statsNode(t, srv, "node-stats")
	c := srv.Client
	ctx := context.Background()
	for name, cmd := range map[string]string{"busy": "while :; do :; done", "idle": "sleep 3600"} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(0), Containers: []v1.Container{busybox("main", cmd)}}}
		if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPod(t, c, "default", "busy", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	waitPod(t, c, "default", "idle", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	var sum *statsv1alpha1.Summary
	pods := map[string]statsv1alpha1.PodStats{}
	deadline := time.Now().Add(90 * time.Second)
	for {
		code, body := kubeletGet(t, srv, n, "/stats/summary")
		switch {
		case code == http.StatusServiceUnavailable && time.Now().Before(deadline):
			// The kubelet could not review the token (the API server was slow): ask again.
			t.Logf("/stats/summary: %d %s", code, body)
			time.Sleep(500 * time.Millisecond)
			continue
		case code != http.StatusOK:
			t.Fatalf("/stats/summary: %d %s", code, body)
		}
		// A new Summary each time: decoding into the last one keeps pointers of absent
		// fields (usageNanoCores before a second sample) from whichever pod was at that
		// index before, as the summary's order is not stable. That once showed the busy
		// pod's rate on the idle one too.
		sum = &statsv1alpha1.Summary{}
		if err := json.Unmarshal([]byte(body), sum); err != nil {
			t.Fatalf("/stats/summary: %v\n%s", err, body)
		}
		pods = map[string]statsv1alpha1.PodStats{}
		for _, p := range sum.Pods {
			if p.CPU != nil && p.CPU.UsageNanoCores != nil {
				pods[p.PodRef.Name] = p
			}
		}
		if len(pods) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods with a CPU rate: %v; summary:\n%s", pods, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if sum.Node.NodeName != n.name || sum.Node.CPU == nil || sum.Node.CPU.UsageNanoCores == nil || *sum.Node.Memory.WorkingSetBytes == 0 {
		t.Fatalf("node stats: %+v", sum.Node)
	}
	busy, idle := pods["busy"], pods["idle"]
	for _, p := range []statsv1alpha1.PodStats{busy, idle} {
		if p.PodRef.Namespace != "default" || p.PodRef.UID == "" || len(p.Containers) != 1 || p.Containers[0].Name != "main" {
			t.Fatalf("pod %s: ref %+v containers %d", p.PodRef.Name, p.PodRef, len(p.Containers))
		}
		if *p.Memory.WorkingSetBytes == 0 {
			t.Fatalf("pod %s: working set 0", p.PodRef.Name)
		}
	}
	if *busy.CPU.UsageCoreNanoSeconds <= *idle.CPU.UsageCoreNanoSeconds {
		t.Fatalf("busy pod used %d ns of CPU, idle one %d", *busy.CPU.UsageCoreNanoSeconds, *idle.CPU.UsageCoreNanoSeconds)
	}
	if *busy.CPU.UsageNanoCores <= *idle.CPU.UsageNanoCores {
		t.Fatalf("busy pod uses %d nanocores, idle one %d", *busy.CPU.UsageNanoCores, *idle.CPU.UsageNanoCores)
	}
	if busy.PodRef.UID == idle.PodRef.UID || *busy.CPU.UsageNanoCores == *idle.CPU.UsageNanoCores {
		t.Fatalf("busy and idle pods report one series: %+v %+v", busy.PodRef, idle.PodRef)
	}
	// Without credentials the summary is refused like every other kubelet endpoint.
	if code, _ := kubeletGetAs(t, "", n, "/stats/summary"); code != http.StatusUnauthorized {
		t.Fatalf("/stats/summary without a token: %d", code)
	}

	// kubectl top pod: the busy pod's CPU above the idle one's.
	var top string
	for {
		top = kubectl(t, srv, "top", "pod", "--no-headers")
		cpu := topCPU(top)
		if b, ok := cpu["busy"]; ok && b > cpu["idle"] {
			if _, ok := cpu["idle"]; ok {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl top pod:\n%s", top)
		}
		time.Sleep(time.Second)
	}
}

// topCPU reads `kubectl top pod --no-headers` into millicores by pod name.
func topCPU(out string) map[string]int {
	m := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[1], "m") {
			continue
		}
		if v, err := strconv.Atoi(strings.TrimSuffix(f[1], "m")); err == nil {
			m[f[0]] = v
		}
	}
	return m
}

// statsNode is a real kubelet that samples its cgroups every second.
func statsNode(t *testing.T, srv *apiservertest.Server, name string) *node {
	t.Helper()
	n := &node{name: name, root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	n.options = func(o *kubelet.Options) { o.StatsInterval = time.Second }
	startKubelet(t, srv, n, true)
	return n
}
