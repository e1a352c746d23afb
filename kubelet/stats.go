package kubelet

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// DefaultStatsInterval is how often the kubelet samples its containers' cgroups (cadvisor's
// housekeeping interval is 10 s too; metrics-server scrapes every 15 s).
const DefaultStatsInterval = 10 * time.Second

// statsSample is one cumulative reading; the CPU rate is the difference of two.
type statsSample struct {
	time     time.Time
	cpuNanos uint64 // cumulative CPU time
	memUsage uint64
	memWS    uint64
}

// cpuRate is the CPU used between two cumulative readings, in nanocores (1e9 = one core).
// ok is false when the pair cannot give a rate: no earlier reading, no time between them,
// or a counter that went back (the container restarted).
func cpuRate(prev, cur statsSample) (nanoCores uint64, ok bool) {
	dt := cur.time.Sub(prev.time)
	if prev.time.IsZero() || dt <= 0 || cur.cpuNanos < prev.cpuNanos {
		return 0, false
	}
	return uint64(float64(cur.cpuNanos-prev.cpuNanos) / dt.Seconds()), true
}

// sampled is the last two readings of one container or of the node.
type sampled struct{ prev, cur statsSample }

func (s *sampled) add(x statsSample) { s.prev, s.cur = s.cur, x }

// containerKey is a container's id: a restarted container is a new one, a new series.
type containerKey = string

type containerSeries struct {
	sampled
	pod       runtime.PodRef
	name      string
	startedAt time.Time
}

// statsCollector samples the cgroups of the node's running containers and the node itself
// every interval, and answers /stats/summary from the last two samples (docs/kubelet.md).
type statsCollector struct {
	rt       runtime.Runtime
	sp       runtime.StatsProvider // nil: the runtime has no cgroups; only the node is reported
	node     string
	interval time.Duration
	started  time.Time

	mu         sync.Mutex
	containers map[containerKey]*containerSeries
	nodeS      sampled
}

func newStatsCollector(rt runtime.Runtime, node string, interval time.Duration) *statsCollector {
	if interval <= 0 {
		interval = DefaultStatsInterval
	}
	sp, _ := rt.(runtime.StatsProvider)
	return &statsCollector{rt: rt, sp: sp, node: node, interval: interval, started: time.Now(), containers: map[containerKey]*containerSeries{}}
}

func (c *statsCollector) run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		c.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample reads every running container's cgroup and the node's /proc counters once.
func (c *statsCollector) sample(ctx context.Context) {
	var reads map[containerKey]*containerSeries
	if c.sp != nil {
		if ctrs, err := c.rt.ListContainers(ctx, ""); err == nil {
			reads = map[containerKey]*containerSeries{}
			for _, ct := range ctrs {
				if ct.State != runtime.ContainerRunning {
					continue
				}
				st, err := c.sp.ContainerStats(ctx, ct.ID)
				if err != nil {
					continue // exited between the list and the read
				}
				reads[ct.ID] = &containerSeries{pod: ct.Pod, name: ct.Name, startedAt: ct.StartedAt,
					sampled: sampled{cur: statsSample{time: st.Time, cpuNanos: st.CPUUsageNanos, memUsage: st.MemoryUsageBytes, memWS: st.MemoryWorkingSetBytes}}}
			}
		}
	}
	node, nodeErr := readNodeSample()
	c.mu.Lock()
	defer c.mu.Unlock()
	if nodeErr == nil {
		c.nodeS.add(node)
	}
	if reads == nil {
		return
	}
	for k, r := range reads {
		if old, ok := c.containers[k]; ok {
			old.add(r.cur)
			continue
		}
		c.containers[k] = r
	}
	for k := range c.containers {
		if _, ok := reads[k]; !ok {
			delete(c.containers, k) // gone or stopped
		}
	}
}

// readNodeSample reads the machine's CPU time (/proc/stat: every state but idle and
// iowait) and memory in use (/proc/meminfo: MemTotal - MemAvailable as the working set).
func readNodeSample() (statsSample, error) {
	s := statsSample{time: time.Now()}
	f, err := os.Open("/proc/stat")
	if err != nil {
		return s, err
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[0] != "cpu" {
			continue
		}
		var busy uint64
		for i, v := range fields[1:] {
			n, _ := strconv.ParseUint(v, 10, 64)
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			if i >= 7 { // guest and guest_nice are already counted in user and nice
				break
			}
			busy += n
		}
		s.cpuNanos = busy * uint64(time.Second/100) // USER_HZ is 100 on Linux
		break
	}
	f.Close()
	m, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return s, err
	}
	var total, avail uint64
	for _, line := range strings.Split(string(m), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 2 {
			continue
		}
		n, _ := strconv.ParseUint(fs[1], 10, 64)
		switch fs[0] {
		case "MemTotal:":
			total = n * 1024
		case "MemAvailable:":
			avail = n * 1024
		}
	}
	if avail <= total {
		s.memUsage, s.memWS = total-avail, total-avail
	}
	return s, nil
}

func cpuStats(s sampled) *statsv1alpha1.CPUStats {
	cum := s.cur.cpuNanos
	out := &statsv1alpha1.CPUStats{Time: metav1.NewTime(s.cur.time), UsageCoreNanoSeconds: &cum}
	if r, ok := cpuRate(s.prev, s.cur); ok {
		out.UsageNanoCores = &r
	}
	return out
}

func memStats(s sampled) *statsv1alpha1.MemoryStats {
	u, ws := s.cur.memUsage, s.cur.memWS
	return &statsv1alpha1.MemoryStats{Time: metav1.NewTime(s.cur.time), UsageBytes: &u, WorkingSetBytes: &ws}
}

// summary is the node's Summary (the kubelet's /stats/summary, k8s.io/kubelet's types): the
// node, and each pod with its running containers. A pod's CPU and memory are the sums of
// its containers' (the pause container is not counted). A container sampled once has no
// CPU rate yet (usageNanoCores absent) until the next sample.
func (c *statsCollector) summary() *statsv1alpha1.Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: c.node, StartTime: metav1.NewTime(c.started)}}
	if !c.nodeS.cur.time.IsZero() {
		out.Node.CPU, out.Node.Memory = cpuStats(c.nodeS), memStats(c.nodeS)
	}
	// Pods by namespace and name, containers by name: a stable order for readers (a map's
	// would change between two requests).
	series := make([]*containerSeries, 0, len(c.containers))
	for _, s := range c.containers {
		series = append(series, s)
	}
	sort.Slice(series, func(i, j int) bool {
		a, b := series[i], series[j]
		if a.pod.Namespace != b.pod.Namespace {
			return a.pod.Namespace < b.pod.Namespace
		}
		if a.pod.Name != b.pod.Name {
			return a.pod.Name < b.pod.Name
		}
		if a.pod.UID != b.pod.UID {
			return a.pod.UID < b.pod.UID
		}
		return a.name < b.name
	})
	pods := map[string]*statsv1alpha1.PodStats{}
	var order []string
	for _, s := range series {
		p := pods[s.pod.UID]
		if p == nil {
			p = &statsv1alpha1.PodStats{PodRef: statsv1alpha1.PodReference{Name: s.pod.Name, Namespace: s.pod.Namespace, UID: s.pod.UID}}
			pods[s.pod.UID] = p
			order = append(order, s.pod.UID)
		}
		cs := statsv1alpha1.ContainerStats{Name: s.name, StartTime: metav1.NewTime(s.startedAt), CPU: cpuStats(s.sampled), Memory: memStats(s.sampled)}
		p.Containers = append(p.Containers, cs)
		if p.StartTime.IsZero() || s.startedAt.Before(p.StartTime.Time) {
			p.StartTime = metav1.NewTime(s.startedAt)
		}
	}
	for _, uid := range order {
		p := pods[uid]
		p.CPU, p.Memory = sumStats(p.Containers)
		out.Pods = append(out.Pods, *p)
	}
	return out
}

// sumStats adds up containers' stats; the pod has a CPU rate only when every container has one.
func sumStats(cs []statsv1alpha1.ContainerStats) (*statsv1alpha1.CPUStats, *statsv1alpha1.MemoryStats) {
	var cum, rate, usage, ws uint64
	haveRate := true
	var t metav1.Time
	for _, c := range cs {
		cum += *c.CPU.UsageCoreNanoSeconds
		if c.CPU.UsageNanoCores != nil {
			rate += *c.CPU.UsageNanoCores
		} else {
			haveRate = false
		}
		usage += *c.Memory.UsageBytes
		ws += *c.Memory.WorkingSetBytes
		if c.CPU.Time.After(t.Time) {
			t = c.CPU.Time
		}
	}
	cpu := &statsv1alpha1.CPUStats{Time: t, UsageCoreNanoSeconds: &cum}
	if haveRate {
		cpu.UsageNanoCores = &rate
	}
	return cpu, &statsv1alpha1.MemoryStats{Time: t, UsageBytes: &usage, WorkingSetBytes: &ws}
}

// serveStatsSummary answers GET /stats/summary as JSON.
func (k *Kubelet) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	// The Summary type has no field for the window its CPU rates are measured over; the API
	// server's metrics.k8s.io reads it here (core/apiserver/metricsapi.go).
	w.Header().Set("X-Wasmkube-Stats-Window", k.stats.interval.String())
	_ = json.NewEncoder(w).Encode(k.stats.summary())
}
