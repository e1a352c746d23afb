package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// BenchmarkPodStartup creates 20 pods at once on a real kubelet (image present, pods bound
// to the node, the default warm sandbox pool full) and measures creation -> Running as seen
// by a watch. It reports p50 and p99 over all pods of all iterations. WASMKUBE_BENCH_TMPFS=1
// puts the kubelet's root and containerd's on tmpfs instead of the machine's disk.
//
//	go test -run '^$' -bench PodStartup -benchtime 5x ./kubelet/
func BenchmarkPodStartup(b *testing.B) {
	perRound := 20
	if v := os.Getenv("WASMKUBE_BENCH_PODS"); v != "" {
		perRound, _ = strconv.Atoi(v)
	}
	srv := apiservertest.Start(b)
	n := &node{name: "node-bench"}
	if os.Getenv("WASMKUBE_BENCH_TMPFS") != "" {
		// The node's directories on tmpfs: start-up without this machine's disk in it.
		n.root, n.daemon = nodetest.TmpfsDir(b), nodetest.ContainerdOnTmpfs(b)
	} else {
		n.root, n.daemon = b.TempDir(), nodetest.Containerd(b)
	}
	n.net = nodetest.Network(b, filepath.Join(n.root, "cni"))
	n.warm = kubelet.DefaultWarmSandboxes // as `wasmkube up` runs; WASMKUBE_BENCH_WARM=0 measures without
	if v := os.Getenv("WASMKUBE_BENCH_WARM"); v != "" {
		n.warm, _ = strconv.Atoi(v)
	}
	startKubeletB(b, srv, n)
	ctrd := n.kubelet.Runtime().(*runtime.Containerd)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	var all []time.Duration
	var cpuUsed time.Duration
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		b.StopTimer()
		for deadline := time.Now().Add(time.Minute); ctrd.WarmSandboxes() < n.warm; { // a node in steady state: its warm pool is full
			if time.Now().After(deadline) {
				b.Fatalf("warm pool at %d of %d after a minute", ctrd.WarmSandboxes(), n.warm)
			}
			time.Sleep(20 * time.Millisecond)
		}
		stopProfile := profileRound(b, it)
		cpu0 := cgroupCPU()
		b.StartTimer()
		w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("round=r%d", it)})
		if err != nil {
			b.Fatal(err)
		}
		created := make([]time.Time, perRound)
		var wg sync.WaitGroup
		for i := 0; i < perRound; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d-%d", it, i), Namespace: "default", Labels: map[string]string{"round": fmt.Sprintf("r%d", it)}},
					Spec: v1.PodSpec{NodeName: n.name, TerminationGracePeriodSeconds: int64p(0),
						Containers: []v1.Container{busybox("app", "trap 'exit 0' TERM; while true; do sleep 1; done")}},
				}
				created[i] = time.Now()
				if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
					b.Error(err)
				}
			}()
		}
		running := map[string]time.Duration{}
		timeout := time.After(2 * time.Minute)
		for len(running) < perRound {
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Modified && ev.Type != watch.Added {
					continue
				}
				p := ev.Object.(*v1.Pod)
				if _, seen := running[p.Name]; !seen && p.Status.Phase == v1.PodRunning {
					var i int
					fmt.Sscanf(p.Name, fmt.Sprintf("bench-%d-%%d", it), &i)
					running[p.Name] = time.Since(created[i])
				}
			case <-timeout:
				b.Fatalf("only %d of %d pods Running after 2 minutes", len(running), perRound)
			}
		}
		cpuUsed += cgroupCPU() - cpu0
		stopProfile()
		w.Stop()
		wg.Wait()
		for _, d := range running {
			all = append(all, d)
		}
		b.StopTimer()
		for i := 0; i < perRound; i++ {
			_ = pods.Delete(ctx, fmt.Sprintf("bench-%d-%d", it, i), metav1.DeleteOptions{})
		}
		for i := 0; i < perRound; i++ {
			for {
				if _, err := pods.Get(ctx, fmt.Sprintf("bench-%d-%d", it, i), metav1.GetOptions{}); apierrors.IsNotFound(err) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	pct := func(p float64) time.Duration { return all[int(p*float64(len(all)-1)+0.5)] }
	b.ReportMetric(float64(pct(0.5).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(pct(0.99).Milliseconds()), "p99-ms")
	b.ReportMetric(float64(all[len(all)-1].Milliseconds()), "max-ms")
	if cpuUsed > 0 {
		b.ReportMetric(float64(cpuUsed.Microseconds())/1000/float64(len(all)), "cpu-ms/pod")
	}
}

// profileRound records the whole machine with perf while round it runs, when
// WASMKUBE_BENCH_PERF names a directory: perf report -i DIR/round-N.data --sort comm shows
// which processes the pods' start-up costs are in.
func profileRound(b *testing.B, it int) (stop func()) {
	dir := os.Getenv("WASMKUBE_BENCH_PERF")
	if dir == "" {
		return func() {}
	}
	cmd := exec.Command("perf", "record", "-a", "-q", "-o", filepath.Join(dir, fmt.Sprintf("round-%d.data", it)))
	if err := cmd.Start(); err != nil {
		b.Fatalf("perf: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // perf is recording
	return func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
}

// cgroupCPU is the CPU time used so far by this process's cgroup (cgroup v1 cpuacct): the
// test process with its API server and kubelet, containerd, the shims and the runc and CNI
// processes they start (not runc's init once it has joined the container's cgroup). 0 when
// the process is in the root cgroup or cpuacct cannot be read. Run the benchmark in a
// cgroup of its own to read it, e.g.
//
//	mkdir /sys/fs/cgroup/cpuacct/bench && echo $$ > /sys/fs/cgroup/cpuacct/bench/cgroup.procs
func cgroupCPU() time.Duration {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.Contains(","+parts[1]+",", ",cpuacct,") || parts[2] == "/" {
			continue
		}
		v, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct", parts[2], "cpuacct.usage"))
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		return time.Duration(n)
	}
	return 0
}
