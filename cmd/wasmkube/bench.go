package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // --pprof-addr
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// benchCmd is the parent of the benchmarks (`wasmkube bench <what>`).
var benchCmd = &cobra.Command{Use: "bench", Short: "Run a benchmark of one component, in process"}

func init() { rootCmd.AddCommand(benchCmd) }

// schedBenchOptions are the flags of `wasmkube bench scheduler`.
type schedBenchOptions struct {
	nodes, pods, clients int
	configFile, output   string
	dataDir, cpuProfile  string
	pprofAddr            string
	leaseInterval        time.Duration
	hollowQPS            float64
	timeout              time.Duration
	logLevel             string
	// shape (bench_shapes.go), initialPods (basic), groups and groupSize (gang), batching
	// ("", "on", "off": the config's profiles as they are, or all set so).
	shape             string
	initialPods       int
	groups, groupSize int
	batching          string
	shapeOf           benchShape
}

// SchedBenchResult is the JSON printed by `wasmkube bench scheduler --output json`.
type SchedBenchResult struct {
	PodsPerSecond float64 `json:"pods_per_second"`
	P50ms         float64 `json:"p50_ms"`
	P99ms         float64 `json:"p99_ms"`
	Scheduled     int     `json:"scheduled"`
	Failed        int     `json:"failed"`
	Nodes         int     `json:"nodes"`
	Pods          int     `json:"pods"`
	// Seconds from the first pod created to the last bound.
	Seconds float64 `json:"seconds"`
	// CreatePerSecond is how fast the clients created the pods.
	CreatePerSecond float64 `json:"create_pods_per_second"`
	// MaxActiveQueue is the longest the scheduler's activeQ got (sampled every 100 ms):
	// near 0 means the scheduler kept up with the pods arriving.
	MaxActiveQueue int `json:"max_active_queue"`
	// LoadAverage is the machine's 1-minute load average at the end: the benchmark
	// shares the CPU with whatever else runs.
	LoadAverage string `json:"load_average,omitempty"`

	// What bounds the run (bench_cost.go), over the measured phase (first creation to
	// last binding): the API requests by verb and resource, busiest first, and per
	// scheduled pod; the process's CPU seconds, and CPU milliseconds per scheduled pod
	// in all and by component (apiserver, etcd, scheduler, hollow-nodes, clients, gc).
	Requests       []RequestRate `json:"requests,omitempty"`
	RequestsPerPod float64       `json:"requests_per_pod"`
	WritesPerPod   float64       `json:"writes_per_pod"`
	// WritesPerPodBy splits WritesPerPod by verb and resource ("POST pods/binding"):
	// the pods' own writes (create, bind, status, events) and the nodes' (leases, node
	// status), which do not grow with the pods.
	WritesPerPodBy   map[string]float64 `json:"writes_per_pod_by_request,omitempty"`
	CPUSeconds       float64            `json:"cpu_seconds"`
	CPUPerPodTotalMs float64            `json:"cpu_ms_per_pod"`
	CPUPerPodMs      map[string]float64 `json:"cpu_ms_per_pod_by_component,omitempty"`

	// Shape is the workload (plain, basic, gang); InitialPods were bound before the
	// measured phase; Batching is the profiles' batching as the run set it ("" as in the
	// config).
	Shape       string `json:"shape"`
	InitialPods int    `json:"initial_pods,omitempty"`
	Batching    string `json:"batching,omitempty"`
	// Gang shape: groups placed whole, in part (a broken all-or-nothing: must be 0) and not
	// at all.
	GroupsWhole   int `json:"groups_whole,omitempty"`
	GroupsPartial int `json:"groups_partial,omitempty"`
	GroupsNone    int `json:"groups_none,omitempty"`
	// BatchAttempts are the scheduler's cycles by what batching did
	// (scheduler_batch_attempts_total: reused, stored, unsignable, flush_<reason>).
	BatchAttempts map[string]float64 `json:"batch_attempts,omitempty"`
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

func init() {
	var o schedBenchOptions
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Measure scheduling throughput end to end: etcd, API server, scheduler and hollow nodes in one process",
		Long: `Start an embedded etcd and API server, --nodes hollow nodes and the scheduler (profiles from
--config), create --pods pods (cpu 100m, memory 128Mi) with --clients concurrent clients, and
wait until every pod is bound. Reports throughput (pods bound per second from the first
creation to the last binding), p50 and p99 latency from creation to bound (as the API
watch shows it), and how many pods were scheduled and how many failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSchedBench(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 5000, "hollow nodes")
	f.IntVar(&o.pods, "pods", 10000, "pods to schedule")
	f.IntVar(&o.clients, "clients", 64, "concurrent clients creating pods")
	f.StringVar(&o.configFile, "config", "", "wasmkube config file whose scheduler: section sets the profiles (default: the default profile)")
	f.StringVar(&o.output, "output", "text", "text or json")
	f.StringVar(&o.dataDir, "data-dir", "", "data directory for etcd (default: a temporary one, removed after)")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured phase to this file")
	f.StringVar(&o.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this address while the benchmark runs")
	f.Float64Var(&o.hollowQPS, "hollow-qps", 100, "API requests per second of the hollow nodes for pod statuses and heartbeats (they share the machine with the control plane)")
	f.DurationVar(&o.leaseInterval, "lease-interval", 10*time.Second, "hollow nodes' lease renewal interval")
	f.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting for pods after this long")
	f.StringVar(&o.logLevel, "log-level", "error", "log level of the components: debug, info, warn, error")
	f.StringVar(&o.shape, "shape", shapePlain, "workload: plain (--pods at once), basic (scheduler_perf's SchedulingBasic: --initial-pods bound first, then --pods measured), gang (--groups PodGroups of --group-size members, all or nothing)")
	f.IntVar(&o.initialPods, "initial-pods", -1, "pods bound before the measured phase (default: 1000 with --shape basic, else 0)")
	f.IntVar(&o.groups, "groups", 1000, "PodGroups of --shape gang")
	f.IntVar(&o.groupSize, "group-size", 8, "members (and minCount) of each PodGroup of --shape gang")
	f.StringVar(&o.batching, "batching", "", "on or off: set every profile's batching (default: as the config says; on when unset)")
	benchCmd.AddCommand(cmd)
}

func runSchedBench(out io.Writer, o schedBenchOptions) error {
	if o.nodes <= 0 || o.pods <= 0 || o.clients <= 0 {
		return fmt.Errorf("bench scheduler: --nodes, --pods and --clients must be positive")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("bench scheduler: --output %q: must be text or json", o.output)
	}
	if o.shape == "" {
		o.shape = shapePlain
	}
	switch o.shape {
	case shapePlain, shapeBasic:
		if o.initialPods < 0 {
			o.initialPods = 0
			if o.shape == shapeBasic {
				o.initialPods = 1000
			}
		}
	case shapeGang:
		if o.groups <= 0 || o.groupSize <= 0 {
			return fmt.Errorf("bench scheduler: --groups and --group-size must be positive")
		}
		o.pods = o.groups * o.groupSize
		o.initialPods = max(o.initialPods, 0)
		o.shapeOf.groupSize = o.groupSize
	default:
		return fmt.Errorf("bench scheduler: --shape %q: must be plain, basic or gang", o.shape)
	}
	o.shapeOf.name = o.shape
	if o.batching != "" && o.batching != "on" && o.batching != "off" {
		return fmt.Errorf("bench scheduler: --batching %q: must be on or off", o.batching)
	}
	log, err := schedLogger(o.logLevel)
	if err != nil {
		return err
	}
	// client-go's event recorder and reflectors log through klog; the benchmark's
	// output is its result.
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if o.pprofAddr != "" {
		go func() { _ = http.ListenAndServe(o.pprofAddr, nil) }()
	}
	dataDir := o.dataDir
	if dataDir == "" {
		dataDir, err = os.MkdirTemp("", "wasmkube-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
	}
	var configData []byte
	if o.configFile != "" {
		if configData, err = os.ReadFile(o.configFile); err != nil {
			return fmt.Errorf("bench scheduler: --config: %w", err)
		}
	}
	if o.batching != "" {
		file, data, remove, err := withBatching(o.configFile, configData, o.batching == "on")
		if err != nil {
			return fmt.Errorf("bench scheduler: %w", err)
		}
		defer remove()
		o.configFile, configData = file, data
	}
	ctx, cancel := signalContext()
	defer cancel()
	progress := func(format string, args ...any) {
		if o.output == "text" {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}

	// Every goroutine a component starts inherits its label: the CPU split by component.
	defer pprof.SetGoroutineLabels(context.Background())
	labelComponent(compAPIServer)
	apiCtx, stopAPI := context.WithCancel(context.Background())
	defer stopAPI()
	srv, err := apiserver.New(apiCtx, apiserver.Options{DataDir: dataDir, Listen: "127.0.0.1:0", Logger: log})
	if err != nil {
		return err
	}
	apiDone := make(chan error, 1)
	go func() { apiDone <- srv.Run(apiCtx) }()
	select {
	case <-srv.Ready():
	case err := <-apiDone:
		return fmt.Errorf("bench scheduler: API server: %w", err)
	}
	defer func() { stopAPI(); <-apiDone }()
	cfg := rest.CopyConfig(srv.AdminRESTConfig())
	cfg.QPS, cfg.Burst = 5000, 10000

	compCtx, stopComponents := context.WithCancel(ctx)
	defer stopComponents()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopComponents()

	start := time.Now()
	ready := make(chan struct{})
	hollowErr := make(chan error, 1)
	labelComponent(compHollow)
	wg.Add(1)
	go func() {
		defer wg.Done()
		hollowErr <- hollow.Run(compCtx, cfg, hollow.Options{Count: o.nodes, Ready: ready, LeaseInterval: o.leaseInterval,
			QPS: float32(o.hollowQPS), Burst: int(o.hollowQPS) * 2, Logger: log})
	}()
	select {
	case <-ready:
	case err := <-hollowErr:
		return fmt.Errorf("bench scheduler: hollow nodes: %w", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	progress("registered %d hollow nodes in %s", o.nodes, time.Since(start).Round(time.Millisecond))

	labelComponent(compScheduler)
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: filepath.Join(dataDir, "wasm-cache"), Logger: log})
	if err != nil {
		return err
	}
	sched, err := scheduler.New(compCtx, scheduler.Options{RESTConfig: cfg, ConfigFile: o.configFile, Config: configData,
		WasmLoader: schedwasm.NewLoader(host).Load, Logger: log})
	if err != nil {
		return err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := sched.Run(compCtx); err != nil {
			log.Error("scheduler stopped", "err", err)
		}
	}()
	for sched.NodeCount() < o.nodes {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}

	labelComponent(compClients)
	ccfg := rest.CopyConfig(cfg)
	ccfg.Dial = (&net.Dialer{}).DialContext // the pod creators get a connection of their own
	client, err := kubeclient.NewClientset(ccfg)
	if err != nil {
		return err
	}
	if o.initialPods > 0 {
		t := time.Now()
		if err := createInitialPods(ctx, client, o.initialPods, o.clients, o.timeout); err != nil {
			return fmt.Errorf("bench scheduler: %w", err)
		}
		progress("bound %d initial pods in %s", o.initialPods, time.Since(t).Round(time.Millisecond))
	}
	if o.shape == shapeGang {
		if err := createGroups(ctx, client, o.groups, o.groupSize, o.clients); err != nil {
			return fmt.Errorf("bench scheduler: %w", err)
		}
	}
	var maxActive atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
				a, _, _ := sched.Pending()
				if int64(a) > maxActive.Load() {
					maxActive.Store(int64(a))
				}
			}
		}
	}()
	res, err := measureScheduling(ctx, client, o, progress)
	stopSampling()
	if res != nil {
		res.MaxActiveQueue = int(maxActive.Load())
		res.LoadAverage = loadAverage()
		res.Shape, res.InitialPods, res.Batching = o.shape, o.initialPods, o.batching
		res.BatchAttempts = batchAttempts(sched.MetricsGatherer())
	}
	if err != nil {
		return err
	}
	if o.output == "json" {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "shape %s, nodes %d, initial pods %d, pods %d: %.0f pods/s, p50 %.1f ms, p99 %.1f ms, scheduled %d, failed %d (%.1f s; pods created at %.0f/s; longest activeQ %d; load average %s)\n",
		res.Shape, res.Nodes, res.InitialPods, res.Pods, res.PodsPerSecond, res.P50ms, res.P99ms, res.Scheduled, res.Failed, res.Seconds, res.CreatePerSecond, res.MaxActiveQueue, res.LoadAverage)
	if len(res.BatchAttempts) > 0 {
		fmt.Fprintf(out, "batching (cycles): %v\n", res.BatchAttempts)
	}
	if res.Shape == shapeGang {
		fmt.Fprintf(out, "groups of %d: %d placed whole, %d in part, %d not at all\n", o.groupSize, res.GroupsWhole, res.GroupsPartial, res.GroupsNone)
	}
	fmt.Fprint(out, formatCost(res))
	return nil
}

// measureScheduling creates the pods and watches them get bound.
func measureScheduling(ctx context.Context, client kubernetes.Interface, o schedBenchOptions, progress func(string, ...any)) (*SchedBenchResult, error) {
	const ns = "default"
	created := make([]time.Time, o.pods)
	boundAt := make([]time.Time, o.pods)
	var boundCount, unschedCount atomic.Int64
	unsched := make([]bool, o.pods)
	var mu sync.Mutex
	index := func(p *v1.Pod) (int, bool) {
		var i int
		if _, err := fmt.Sscanf(p.Name, "bench-%d", &i); err != nil || i < 0 || i >= o.pods {
			return 0, false
		}
		return i, true
	}
	observe := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		i, ok := index(p)
		if !ok {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if p.Spec.NodeName != "" && boundAt[i].IsZero() {
			boundAt[i] = now
			boundCount.Add(1)
			if unsched[i] {
				unsched[i] = false
				unschedCount.Add(-1)
			}
			return
		}
		if p.Spec.NodeName == "" && !unsched[i] {
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Reason == v1.PodReasonUnschedulable {
					unsched[i] = true
					unschedCount.Add(1)
				}
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, n any) { observe(n) }})
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	factory.Start(wctx.Done())
	cache.WaitForCacheSync(wctx.Done(), inf.HasSynced)

	var profFile io.WriteCloser
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return nil, err
		}
		profFile = f
	}
	reqBefore, err := requestCounts(prometheus.DefaultGatherer)
	if err != nil {
		return nil, err
	}
	rec, err := startCPURecorder(profFile)
	if err != nil {
		return nil, err
	}
	recording := true
	defer func() {
		if recording {
			_, _, _ = rec.stop()
		}
	}()

	begin := time.Now()
	var next atomic.Int64
	var createErr atomic.Value
	var cw sync.WaitGroup
	for c := 0; c < o.clients; c++ {
		cw.Add(1)
		go func() {
			defer cw.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= o.pods || ctx.Err() != nil {
					return
				}
				pod := o.shapeOf.podFor(i)
				t := time.Now()
				mu.Lock()
				created[i] = t
				mu.Unlock()
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					createErr.CompareAndSwap(nil, fmt.Errorf("create pod %s: %w", pod.Name, err))
					return
				}
			}
		}()
	}
	cw.Wait()
	createdIn := time.Since(begin)
	if v := createErr.Load(); v != nil {
		return nil, v.(error)
	}
	progress("created %d pods in %s", o.pods, createdIn.Round(time.Millisecond))
	deadline := time.After(o.timeout)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastBound, stale := int64(-1), 0
wait:
	for {
		b, u := boundCount.Load(), unschedCount.Load()
		if b+u >= int64(o.pods) {
			// Unschedulable pods get no further chance unless bindings stop coming.
			if u == 0 || stale >= 5 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-deadline:
			break wait
		case <-tick.C:
			if b == lastBound {
				stale++
			} else {
				stale = 0
			}
			lastBound = b
			progress("bound %d/%d", b, o.pods)
		}
	}
	byComponent, cpuSeconds, profErr := rec.stop()
	recording = false
	measured := time.Since(begin).Seconds()
	reqAfter, err := requestCounts(prometheus.DefaultGatherer)
	if err != nil {
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	var lat []float64
	var last time.Time
	for i := range o.pods {
		if boundAt[i].IsZero() {
			continue
		}
		lat = append(lat, float64(boundAt[i].Sub(created[i]))/float64(time.Millisecond))
		if boundAt[i].After(last) {
			last = boundAt[i]
		}
	}
	sort.Float64s(lat)
	res := &SchedBenchResult{Nodes: o.nodes, Pods: o.pods, Scheduled: len(lat), Failed: o.pods - len(lat),
		CreatePerSecond: float64(o.pods) / createdIn.Seconds()}
	if len(lat) > 0 {
		res.Seconds = last.Sub(begin).Seconds()
		res.PodsPerSecond = float64(len(lat)) / res.Seconds
		res.P50ms = percentile(lat, 0.50)
		res.P99ms = percentile(lat, 0.99)
	}
	if o.shapeOf.groupSize > 0 {
		res.GroupsWhole, res.GroupsPartial, res.GroupsNone = gangOutcome(boundAt, o.shapeOf.groupSize)
	}
	res.Requests = requestRates(reqBefore, reqAfter, measured)
	res.CPUSeconds = cpuSeconds
	if n := float64(len(lat)); n > 0 {
		for _, r := range res.Requests {
			res.RequestsPerPod += float64(r.Count) / n
			if writeVerb(r.Verb) {
				res.WritesPerPod += float64(r.Count) / n
				if res.WritesPerPodBy == nil {
					res.WritesPerPodBy = map[string]float64{}
				}
				res.WritesPerPodBy[r.what()] += float64(r.Count) / n
			}
		}
		res.CPUPerPodTotalMs = cpuSeconds * 1000 / n
		if profErr == nil {
			res.CPUPerPodMs = map[string]float64{}
			for c, sec := range byComponent {
				res.CPUPerPodMs[c] = sec * 1000 / n
			}
		}
	}
	return res, nil // without a readable profile the CPU split stays empty
}

func percentile(sorted []float64, q float64) float64 {
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func benchPod(i int) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%d", i), Labels: map[string]string{"app": "bench"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "pause", Image: "pause",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")}},
		}}},
	}
}
