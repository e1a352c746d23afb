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
	"github.com/wasmkube/wasmkube/internal/kubeclient"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
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
	// scheduler is in-process, wasmkube or upstream (bench_upstream.go); upstreamBinary
	// is upstream's kube-scheduler; backlog: every measured pod is created before the
	// scheduler starts. configData is the config file's content (after --batching).
	scheduler      string
	upstreamBinary string
	backlog        bool
	configData     []byte
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

	// Scheduler is what scheduled (in-process, wasmkube or upstream: bench_upstream.go);
	// Backlog, that every measured pod was created before it started, so that the run
	// measures how fast it drains them (Seconds then count from its start).
	Scheduler string `json:"scheduler"`
	Backlog   bool   `json:"backlog,omitempty"`
	// FirstBoundSeconds is from the start of the measured phase (with a backlog, the
	// scheduler's start) to the first pod bound; DrainPodsPerSecond the pods bound per
	// second from the first binding to the last.
	FirstBoundSeconds  float64 `json:"first_bound_seconds"`
	DrainPodsPerSecond float64 `json:"drain_pods_per_second"`
	// SchedulerCPUPerPodMs is the scheduler's CPU per scheduled pod over the measured
	// phase (a child process: its own CPU time, GC included; in process: its goroutines'
	// share of the profile, GC not included); SchedulerDrainCPUPerPodMs the same from the
	// first binding to the last (child processes only: their start left out).
	SchedulerCPUPerPodMs      float64 `json:"scheduler_cpu_ms_per_pod"`
	SchedulerDrainCPUPerPodMs float64 `json:"scheduler_drain_cpu_ms_per_pod,omitempty"`
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
	f.StringVar(&o.scheduler, "scheduler", schedInProcess, "what schedules: in-process (wasmkube's scheduler in this process), wasmkube (wasmkube's scheduler as a process of its own) or upstream (--upstream-binary as a process of its own); both child processes run as system:kube-scheduler and their CPU is read from /proc")
	f.StringVar(&o.upstreamBinary, "upstream-binary", "bin/kube-scheduler", "upstream kube-scheduler for --scheduler upstream (scripts/upstream-scheduler.sh builds v1.37.2 there)")
	f.BoolVar(&o.backlog, "backlog", false, "create every measured pod before the scheduler starts, then measure how fast it drains them (the scheduler alone, not pod creation)")
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
	if o.scheduler == "" {
		o.scheduler = schedInProcess
	}
	if err := checkSchedulerFlags(o); err != nil {
		return fmt.Errorf("bench scheduler: %w", err)
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
	o.configData = configData
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

	labelComponent(compClients)
	ccfg := rest.CopyConfig(cfg)
	ccfg.Dial = (&net.Dialer{}).DialContext // the pod creators get a connection of their own
	client, err := kubeclient.NewClientset(ccfg)
	if err != nil {
		return err
	}
	schedCfg, err := srv.ComponentRESTConfig(apiserver.SchedulerUser)
	if err != nil {
		return err
	}
	sched, err := newBenchScheduler(o, cfg, schedCfg, client, dataDir, log)
	if err != nil {
		return fmt.Errorf("bench scheduler: %w", err)
	}
	defer sched.Stop()
	if !o.backlog {
		t := time.Now()
		if err := sched.Start(compCtx, true); err != nil {
			return fmt.Errorf("bench scheduler: %w", err)
		}
		progress("%s scheduler ready in %s", o.scheduler, time.Since(t).Round(time.Millisecond))
	}
	if o.initialPods > 0 {
		t := time.Now()
		create := func() error { return createInitialPods(ctx, client, o.initialPods, o.clients, o.timeout) }
		if o.backlog { // no scheduler may run before the backlog is complete
			create = func() error { return bindInitialPods(ctx, client, o.initialPods, o.clients) }
		}
		if err := create(); err != nil {
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
				if a := sched.ActiveQueue(); int64(a) > maxActive.Load() {
					maxActive.Store(int64(a))
				}
			}
		}
	}()
	res, err := measureScheduling(ctx, client, o, sched, progress)
	stopSampling()
	if res != nil {
		res.MaxActiveQueue = int(maxActive.Load())
		res.LoadAverage = loadAverage()
		res.Shape, res.InitialPods, res.Batching = o.shape, o.initialPods, o.batching
		res.BatchAttempts = sched.BatchAttempts()
	}
	if err != nil {
		return err
	}
	if o.output == "json" {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprintf(out, "shape %s, nodes %d, initial pods %d, pods %d: %.0f pods/s, p50 %.1f ms, p99 %.1f ms, scheduled %d, failed %d (%.1f s; pods created at %.0f/s; longest activeQ %d; load average %s)\n",
		res.Shape, res.Nodes, res.InitialPods, res.Pods, res.PodsPerSecond, res.P50ms, res.P99ms, res.Scheduled, res.Failed, res.Seconds, res.CreatePerSecond, res.MaxActiveQueue, res.LoadAverage)
	fmt.Fprint(out, formatSchedulerLine(res))
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
func measureScheduling(ctx context.Context, client kubernetes.Interface, o schedBenchOptions, sched benchScheduler, progress func(string, ...any)) (*SchedBenchResult, error) {
	const ns = "default"
	created := make([]time.Time, o.pods)
	boundAt := make([]time.Time, o.pods)
	var boundCount, unschedCount atomic.Int64
	unsched := make([]bool, o.pods)
	var mu sync.Mutex
	// The first binding, and the scheduler's CPU then: the drain without the start.
	var firstBound time.Time
	var firstCPU time.Duration
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
			if boundCount.Add(1) == 1 {
				firstBound = now
				firstCPU, _ = sched.CPU()
			}
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
	createPods := func() (time.Duration, error) {
		t := time.Now()
		err := forEach(ctx, o.pods, o.clients, func(i int) error {
			pod := o.shapeOf.podFor(i)
			mu.Lock()
			created[i] = time.Now()
			mu.Unlock()
			if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create pod %s: %w", pod.Name, err)
			}
			return nil
		})
		return time.Since(t), err
	}
	var createdIn time.Duration
	var err error
	if o.backlog {
		if createdIn, err = createPods(); err != nil {
			return nil, err
		}
		progress("created a backlog of %d pods in %s", o.pods, createdIn.Round(time.Millisecond))
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
	beginCPU, _ := sched.CPU()
	if o.backlog {
		if err := sched.Start(ctx, false); err != nil {
			return nil, err
		}
		progress("started the %s scheduler", o.scheduler)
	} else {
		if createdIn, err = createPods(); err != nil {
			return nil, err
		}
		progress("created %d pods in %s", o.pods, createdIn.Round(time.Millisecond))
	}
	deadline := time.After(o.timeout)
	// Checked every 100 ms, so that a child scheduler's CPU is read soon after the last
	// binding; progress is printed every second.
	const ticksPerSecond = 10
	tick := time.NewTicker(time.Second / ticksPerSecond)
	defer tick.Stop()
	lastBound, stale, ticks := int64(-1), 0, 0
wait:
	for {
		b, u := boundCount.Load(), unschedCount.Load()
		if b+u >= int64(o.pods) {
			// Unschedulable pods get no further chance unless bindings stop coming.
			if u == 0 || stale >= 5*ticksPerSecond {
				break
			}
		}
		if err := sched.Failed(); err != nil {
			return nil, err
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
			if ticks++; ticks%ticksPerSecond == 0 {
				progress("bound %d/%d", b, o.pods)
			}
		}
	}
	endCPU, childCPU := sched.CPU()
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
		from := created[i]
		if o.backlog { // the time a pod waited for the scheduler to start is not its
			from = begin
		}
		lat = append(lat, float64(boundAt[i].Sub(from))/float64(time.Millisecond))
		if boundAt[i].After(last) {
			last = boundAt[i]
		}
	}
	sort.Float64s(lat)
	res := &SchedBenchResult{Nodes: o.nodes, Pods: o.pods, Scheduled: len(lat), Failed: o.pods - len(lat),
		CreatePerSecond: float64(o.pods) / createdIn.Seconds(), Scheduler: o.scheduler, Backlog: o.backlog}
	if len(lat) > 0 {
		res.Seconds = last.Sub(begin).Seconds()
		res.PodsPerSecond = float64(len(lat)) / res.Seconds
		res.P50ms = percentile(lat, 0.50)
		res.P99ms = percentile(lat, 0.99)
		res.FirstBoundSeconds = firstBound.Sub(begin).Seconds()
		if d := last.Sub(firstBound).Seconds(); len(lat) > 1 && d > 0 {
			res.DrainPodsPerSecond = float64(len(lat)-1) / d
		}
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
			res.SchedulerCPUPerPodMs = res.CPUPerPodMs[compScheduler]
		}
		if childCPU { // the child's CPU joins the bench's, under its component
			ms := float64(endCPU-beginCPU) / float64(time.Millisecond) / n
			res.SchedulerCPUPerPodMs = ms
			res.CPUPerPodTotalMs += ms
			res.CPUSeconds += (endCPU - beginCPU).Seconds()
			if res.CPUPerPodMs != nil {
				res.CPUPerPodMs[compScheduler] = ms
			}
			if n > 1 && !firstBound.IsZero() {
				res.SchedulerDrainCPUPerPodMs = float64(endCPU-firstCPU) / float64(time.Millisecond) / (n - 1)
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
