package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/storage"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// policyBenchOptions are the flags of `wasmkube bench policy`.
type policyBenchOptions struct {
	servers, nodes, changes  int
	writers, swaps           int
	repo, dataDir, output    string
	logLevel, cpuProfile     string
	idle, pause, waitTimeout time.Duration
}

// PolicyBenchResult is what `wasmkube bench policy --output json` prints (issue 27's targets).
type PolicyBenchResult struct {
	APIServers int `json:"api_servers"`
	Schedulers int `json:"schedulers"`
	Kubelets   int `json:"hollow_kubelets"`

	// (a) From the apply of a changed WasmPolicy (the admission, scheduler and kubelet
	// policies each patched to their other cached module) to every targeted component's
	// report saying the new generation is Active, and to the roll-up's Ready n/n: p50 and
	// p99 over Changes changes; by hook as well.
	Changes         int                `json:"changes"`
	ActiveP50ms     float64            `json:"apply_to_active_p50_ms"`
	ActiveP99ms     float64            `json:"apply_to_active_p99_ms"`
	ReadyP50ms      float64            `json:"apply_to_ready_p50_ms"`
	ReadyP99ms      float64            `json:"apply_to_ready_p99_ms"`
	ActiveByHookP50 map[string]float64 `json:"apply_to_active_p50_ms_by_hook"`
	ActiveByHookP99 map[string]float64 `json:"apply_to_active_p99_ms_by_hook"`

	// (b) The first fetch and compile of the Go module (bytes), from the registry into an
	// empty cache and an empty wasm host (wasmoci Pull, wasmhost Load: compile, ABI check),
	// and from its first apply to Active on every API server (each fetches, compiles,
	// initializes and smoke-calls it).
	GoModuleBytes       int     `json:"go_module_bytes"`
	FirstFetchCompileMs float64 `json:"first_fetch_compile_ms"`
	FirstLoadClusterMs  float64 `json:"first_apply_to_active_ms"`

	// (c) Writers creating ConfigMaps (half labelled team, which the policy admits, half
	// not, which it refuses) while the policy is swapped Swaps times between two
	// equivalent modules (WAT and Go): requests, failures (an error other than the
	// policy's refusal), and wrong verdicts (must all be 0).
	Writers         int     `json:"writers"`
	SwapCount       int     `json:"swaps"`
	SwapP50ms       float64 `json:"swap_apply_to_active_p50_ms"`
	SwapP99ms       float64 `json:"swap_apply_to_active_p99_ms"`
	Requests        int64   `json:"requests"`
	Failed          int64   `json:"failed"`
	WronglyAdmitted int64   `json:"wrongly_admitted"`
	WronglyRefused  int64   `json:"wrongly_refused"`

	// (d) WasmPolicyReport writes (create, update, patch requests) per change per targeted
	// component during (a), the roll-up's status writes per change per policy, and both
	// during IdleSeconds without changes (must be 0).
	ReportWritesPerComponentChange float64 `json:"report_writes_per_component_per_change"`
	StatusWritesPerPolicyChange    float64 `json:"status_writes_per_policy_per_change"`
	IdleSeconds                    float64 `json:"idle_seconds"`
	IdleReportWrites               int64   `json:"idle_report_writes"`
	IdleStatusWrites               int64   `json:"idle_status_writes"`

	LoadAverage string `json:"load_average"`
}

func init() {
	var o policyBenchOptions
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Measure WasmPolicy swaps end to end: API servers, a scheduler and hollow kubelets loading policies, in one process",
		Long: `Start an embedded etcd, --servers API servers on it (each with its admission loader), the
scheduler and the controllers (the wasmpolicy roll-up among them), --nodes hollow nodes that
load the kubelet policies (spread over the API servers) and a registry on loopback; build the
modules from the repository (--repo: wat2wasm and the Go toolchain) and push them. Then:
(a) --changes changes of an admission, a scheduler and a kubelet policy, each to its other
cached module: time from the apply to Active in every component's report and to Ready n/n;
(b) the first fetch and compile of the Go module (wasm-examples/go/require-labels) from the
registry, alone and as a first apply on every API server; (c) --writers clients creating
ConfigMaps, half of them refused by the validate policy, while it is swapped --swaps times
between two equivalent modules (require-team.wat and the Go require-labels): failed requests
and wrong verdicts; (d) WasmPolicyReport and status writes per change, and during --idle
without changes. See docs/benchmarks.md (issue 27).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPolicyBench(cmd.OutOrStdout(), o) },
	}
	f := cmd.Flags()
	f.IntVar(&o.servers, "servers", 3, "API servers on the one etcd")
	f.IntVar(&o.nodes, "nodes", 100, "hollow nodes that load the kubelet policies")
	f.IntVar(&o.changes, "changes", 20, "changes measured in (a)")
	f.IntVar(&o.writers, "writers", 16, "clients creating objects in (c)")
	f.IntVar(&o.swaps, "swaps", 20, "policy swaps in (c)")
	f.StringVar(&o.repo, "repo", ".", "the wasmkube repository, whose test modules and Go example are built")
	f.StringVar(&o.dataDir, "data-dir", "", "data directory (default: a temporary one, removed after)")
	f.StringVar(&o.output, "output", "text", "text or json")
	f.StringVar(&o.logLevel, "log-level", "error", "log level of the components: debug, info, warn, error")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of (a)'s changes to this file (goroutines labelled by component)")
	f.DurationVar(&o.idle, "idle", 30*time.Second, "the quiet window of (d)")
	f.DurationVar(&o.pause, "pause", 500*time.Millisecond, "pause between two changes or swaps")
	f.DurationVar(&o.waitTimeout, "wait-timeout", 3*time.Minute, "give up when a change is not Active everywhere after this long")
	benchCmd.AddCommand(cmd)
}

// benchHooks are the three policies of (a), one per component kind, each with the two
// image tags it alternates between.
var benchHooks = []struct {
	policy, hook, component string
}{
	{"bench-validate", string(policyv1alpha1.HookAdmissionValidate), policyv1alpha1.ComponentAPIServer},
	{"bench-score", string(policyv1alpha1.HookSchedulerScore), policyv1alpha1.ComponentScheduler},
	{"bench-probe", string(policyv1alpha1.HookKubeletProbe), policyv1alpha1.ComponentKubelet},
}

// benchNamespace holds (c)'s objects; the validate policy selects it by label.
const benchNamespace = "bench-policy"

func runPolicyBench(out io.Writer, o policyBenchOptions) error {
	if o.servers <= 0 || o.nodes <= 0 || o.changes <= 0 || o.writers <= 0 || o.swaps <= 0 {
		return errors.New("bench policy: --servers, --nodes, --changes, --writers and --swaps must be positive")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("bench policy: --output %q: must be text or json", o.output)
	}
	log, err := schedLogger(o.logLevel)
	if err != nil {
		return err
	}
	klog.SetSlogLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	progress := func(format string, args ...any) {
		if o.output == "text" {
			fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
		}
	}
	dataDir := o.dataDir
	if dataDir == "" {
		if dataDir, err = os.MkdirTemp("", "wasmkube-bench-policy-"); err != nil {
			return err
		}
		defer os.RemoveAll(dataDir)
	}
	ctx, cancel := signalContext()
	defer cancel()

	mods, err := buildBenchModules(ctx, o.repo, filepath.Join(dataDir, "modules"))
	if err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}
	progress("modules built: Go require-labels %d bytes", len(mods["validate:go"]))
	regs, err := startRegistry(ctx, filepath.Join(dataDir, "registry"), log, "127.0.0.1:0")
	if err != nil {
		return err
	}
	reg := regs[0]
	for tag, wasm := range mods {
		repo, t, _ := strings.Cut(tag, ":")
		if _, err := wasmoci.Push(ctx, wasm, reg+"/bench/"+repo+":"+t, wasmoci.PushOptions{Created: time.Unix(1, 0)}); err != nil {
			return fmt.Errorf("bench policy: push %s: %w", tag, err)
		}
	}
	res := &PolicyBenchResult{APIServers: o.servers, Schedulers: 1, Kubelets: o.nodes, GoModuleBytes: len(mods["validate:go"])}

	// (b) first: the Go module fetched and compiled alone, into an empty cache and host.
	if res.FirstFetchCompileMs, err = firstFetchCompile(ctx, reg+"/bench/validate:go", filepath.Join(dataDir, "fresh-cache")); err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}
	progress("(b) first fetch + compile of the Go module: %.0f ms", res.FirstFetchCompileMs)

	defer pprof.SetGoroutineLabels(context.Background())
	labelComponent(compAPIServer)
	servers, stop, err := startBenchServers(ctx, o.servers, dataDir, log)
	if err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}
	defer stop()
	progress("%d API servers up", len(servers))
	cs, err := readControllerSettings("")
	if err != nil {
		return err
	}
	compCtx, stopComponents := context.WithCancel(ctx)
	defer stopComponents()
	labelComponent(compScheduler) // and the controllers
	if err := startControlPlane(compCtx, servers[0], filepath.Join(dataDir, "api-0"), "", "", cs, false, log); err != nil {
		return err
	}
	var hollowWG sync.WaitGroup
	defer hollowWG.Wait()
	defer stopComponents()
	labelComponent(compHollow)
	if err := startBenchHollowNodes(compCtx, &hollowWG, servers, o.nodes, filepath.Join(dataDir, "hollow"), log); err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}
	progress("%d hollow nodes load policies", o.nodes)

	labelComponent(compClients)
	admin := rest.CopyConfig(servers[0].AdminRESTConfig())
	admin.QPS, admin.Burst = 1000, 2000
	dyn, err := dynamic.NewForConfig(admin)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	obs := newPolicyObserver()
	if err := obs.start(compCtx, dyn); err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace, Labels: map[string]string{"wasmkube.io/bench-policy": "true"}}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	expected := map[string]int{policyv1alpha1.ComponentAPIServer: o.servers, policyv1alpha1.ComponentScheduler: 1, policyv1alpha1.ComponentKubelet: o.nodes}
	b := &policyBench{o: o, dyn: dyn, obs: obs, reg: reg, expected: expected, progress: progress}

	// Every policy once with each of its modules, so that (a) swaps between cached ones.
	start := time.Now()
	for _, tag := range []string{"v2", "v1"} {
		if _, err := b.change(ctx, tag); err != nil {
			return fmt.Errorf("bench policy: warming the modules: %w", err)
		}
	}
	progress("policies in force on every component (both modules cached) after %s", time.Since(start).Round(time.Millisecond))

	// (a) and (d).
	if err := b.changesAndWrites(ctx, res); err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}

	// (b) in the cluster: the Go module's first apply, fetched and compiled by every API server.
	m, err := b.apply(ctx, "bench-validate", "go")
	if err != nil {
		return fmt.Errorf("bench policy: the Go module's first apply: %w", err)
	}
	res.FirstLoadClusterMs = m
	progress("(b) the Go module's first apply to Active on %d API servers: %.0f ms", o.servers, m)
	if _, err := b.apply(ctx, "bench-validate", "v1"); err != nil {
		return err
	}

	// (c)
	if err := b.writersDuringSwaps(ctx, servers, res); err != nil {
		return fmt.Errorf("bench policy: %w", err)
	}
	res.LoadAverage = loadAverage()
	if o.output == "json" {
		return json.NewEncoder(out).Encode(res)
	}
	fmt.Fprint(out, formatPolicyBench(res))
	return nil
}

// formatPolicyBench is the text report.
func formatPolicyBench(r *PolicyBenchResult) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d API servers, %d scheduler, %d hollow kubelets loading policies; load average %s\n", r.APIServers, r.Schedulers, r.Kubelets, r.LoadAverage)
	fmt.Fprintf(&sb, "(a) apply -> Active on every component: p50 %.0f ms, p99 %.0f ms; -> Ready n/n: p50 %.0f ms, p99 %.0f ms (%d changes)\n",
		r.ActiveP50ms, r.ActiveP99ms, r.ReadyP50ms, r.ReadyP99ms, r.Changes)
	hooks := make([]string, 0, len(r.ActiveByHookP99))
	for h := range r.ActiveByHookP99 {
		hooks = append(hooks, h)
	}
	sort.Strings(hooks)
	for _, h := range hooks {
		fmt.Fprintf(&sb, "    %-20s p50 %.0f ms, p99 %.0f ms\n", h, r.ActiveByHookP50[h], r.ActiveByHookP99[h])
	}
	fmt.Fprintf(&sb, "(b) Go module of %d bytes: first fetch + compile %.0f ms; first apply -> Active on every API server %.0f ms\n",
		r.GoModuleBytes, r.FirstFetchCompileMs, r.FirstLoadClusterMs)
	fmt.Fprintf(&sb, "(c) %d writers, %d swaps (apply -> Active p50 %.0f ms, p99 %.0f ms): %d requests, %d failed, %d wrongly admitted, %d wrongly refused\n",
		r.Writers, r.SwapCount, r.SwapP50ms, r.SwapP99ms, r.Requests, r.Failed, r.WronglyAdmitted, r.WronglyRefused)
	fmt.Fprintf(&sb, "(d) report writes per component per change %.2f; status writes per policy per change %.2f; idle %.0f s: %d report writes, %d status writes\n",
		r.ReportWritesPerComponentChange, r.StatusWritesPerPolicyChange, r.IdleSeconds, r.IdleReportWrites, r.IdleStatusWrites)
	return sb.String()
}

// quantile is the q-quantile (0..1) of unsorted samples (bench.go's percentile).
func quantile(ms []float64, q float64) float64 {
	if len(ms) == 0 {
		return 0
	}
	s := append([]float64(nil), ms...)
	sort.Float64s(s)
	return percentile(s, q)
}

// buildBenchModules builds the benchmark's modules from the repository: the validate
// policy as WAT (require-team.wat) and as Go (wasm-examples/go/require-labels, the
// module of (b)), and a Score and a probe, each with a second variant that differs only
// by a custom section (another digest, the same behaviour). Keys are repo:tag.
func buildBenchModules(ctx context.Context, repo, dir string) (map[string][]byte, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	wat := func(file string) ([]byte, error) {
		out := filepath.Join(dir, filepath.Base(file)+".wasm")
		if b, err := exec.CommandContext(ctx, "wat2wasm", "-o", out, filepath.Join(repo, file)).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("wat2wasm %s (wabt: scripts/deps.sh; --repo is the repository): %v\n%s", file, err, b)
		}
		return os.ReadFile(out)
	}
	mods := map[string][]byte{}
	for _, m := range []struct{ key, file string }{
		{"validate:v1", "plugins/admitwasm/testdata/require-team.wat"},
		{"score:v1", "plugins/wasmpolicy/testdata/prefer-two.wat"},
		{"probe:v1", "plugins/wasmpolicy/testdata/say-no.wat"},
	} {
		b, err := wat(m.file)
		if err != nil {
			return nil, err
		}
		mods[m.key] = b
	}
	mods["validate:v2"] = withCustomSection(mods["validate:v1"], "wasmkube-bench", []byte("v2"))
	mods["score:v2"] = withCustomSection(mods["score:v1"], "wasmkube-bench", []byte("v2"))
	mods["probe:v2"] = withCustomSection(mods["probe:v1"], "wasmkube-bench", []byte("v2"))
	out := filepath.Join(dir, "require-labels.wasm")
	cmd := exec.CommandContext(ctx, filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", out, "./wasm-examples/go/require-labels")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build wasm-examples/go/require-labels for wasip1 (--repo is the repository): %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	mods["validate:go"] = b
	return mods, nil
}

// withCustomSection appends a custom section (id 0) to a module: valid wasm that behaves
// the same and has another digest.
func withCustomSection(wasm []byte, name string, payload []byte) []byte {
	uleb := func(b []byte, v uint64) []byte {
		for {
			c := byte(v & 0x7f)
			v >>= 7
			if v != 0 {
				c |= 0x80
			}
			b = append(b, c)
			if v == 0 {
				return b
			}
		}
	}
	sec := append(uleb(nil, uint64(len(name))), name...)
	sec = append(sec, payload...)
	out := append(append([]byte(nil), wasm...), 0)
	out = uleb(out, uint64(len(sec)))
	return append(out, sec...)
}

// firstFetchCompile pulls ref into an empty module cache and compiles it (with the ABI
// check) on a new wasm host without a compilation cache: what a component pays the first
// time it sees a module. Milliseconds.
func firstFetchCompile(ctx context.Context, ref, dir string) (float64, error) {
	store, err := wasmoci.Open(wasmoci.Options{Dir: dir})
	if err != nil {
		return 0, err
	}
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, err
	}
	defer host.Close(context.Background())
	t := time.Now()
	m, err := store.Pull(ctx, ref, wasmoci.PullIfNotPresent)
	if err != nil {
		return 0, err
	}
	mod, err := host.Load(ctx, wasmhost.LoadOptions{Name: "first-fetch", Path: m.Path, Wasm: m.Wasm})
	if err != nil {
		return 0, err
	}
	d := time.Since(t)
	mod.Close(context.Background())
	return float64(d.Microseconds()) / 1000, nil
}

// startBenchServers starts an embedded etcd and n API servers on it as on an external
// etcd (so that they share the cluster's identity through it; the others get the first
// one's identity key, as an operator adds servers: docs/security.md), each with its
// admission plugins and WasmPolicy loader.
func startBenchServers(ctx context.Context, n int, dataDir string, log *slog.Logger) ([]*apiserver.Server, func(), error) {
	labelComponent(compEtcd)
	etcd, err := storage.NewBackend(ctx, storage.Config{DataDir: filepath.Join(dataDir, "etcd"), Logger: log})
	labelComponent(compAPIServer)
	if err != nil {
		return nil, nil, err
	}
	apiCtx, stopAPI := context.WithCancel(context.Background())
	var servers []*apiserver.Server
	stop := func() {
		stopAPI()
		for _, s := range servers {
			_ = s.Wait()
		}
		_ = etcd.Close()
	}
	for i := 0; i < n; i++ {
		dir := filepath.Join(dataDir, fmt.Sprintf("api-%d", i))
		opts := apiserver.Options{DataDir: dir, Listen: "127.0.0.1:0", Logger: log, EtcdEndpoints: etcd.Client().Endpoints()}
		if i > 0 {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				stop()
				return nil, nil, err
			}
			key, err := os.ReadFile(filepath.Join(dataDir, "api-0", "identity.key"))
			if err == nil {
				err = os.WriteFile(filepath.Join(dir, "identity.key"), key, 0o600)
			}
			if err != nil {
				stop()
				return nil, nil, err
			}
		}
		adm, plugins, err := newAdmission(apiCtx, dir, "", log)
		if err != nil {
			stop()
			return nil, nil, err
		}
		opts.Admission = plugins
		srv, err := startAPIServer(apiCtx, opts)
		if err != nil {
			stop()
			return nil, nil, fmt.Errorf("API server %d: %w", i, err)
		}
		servers = append(servers, srv)
		runAdmission(apiCtx, adm, srv, moduleCache(filepath.Join(dir, "wasm-modules"), nil), log)
		if ctx.Err() != nil {
			stop()
			return nil, nil, ctx.Err()
		}
	}
	return servers, stop, nil
}

// startBenchHollowNodes spreads n hollow nodes that load policies over the servers, and
// returns once every one of them has applied its first selection.
func startBenchHollowNodes(ctx context.Context, wg *sync.WaitGroup, servers []*apiserver.Server, n int, dir string, log *slog.Logger) error {
	errs := make(chan error, len(servers))
	var readies []chan struct{}
	for i, srv := range servers {
		count := n / len(servers)
		if i < n%len(servers) {
			count++
		}
		if count == 0 {
			continue
		}
		ready := make(chan struct{})
		readies = append(readies, ready)
		opts := hollow.Options{Count: count, Prefix: fmt.Sprintf("hollow-%d-", i), Ready: ready, Logger: log,
			QPS: 100, Burst: 200, Policies: &hollow.PolicyOptions{CacheDir: dir}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hollow.Run(ctx, srv.AdminRESTConfig(), opts); err != nil {
				errs <- err
			}
		}()
	}
	for _, r := range readies {
		select {
		case <-r:
		case err := <-errs:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// policyWriteCounts are the process's API servers' write requests (any code) of
// WasmPolicyReports and of WasmPolicy status, from apiserver_request_total.
type policyWriteCounts struct{ reports, status int64 }

func policyWrites() policyWriteCounts {
	var c policyWriteCounts
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return c
	}
	writes := map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "CREATE": true, "UPDATE": true}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_request_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if !writes[strings.ToUpper(l["verb"])] || l["group"] != policyv1alpha1.GroupName {
				continue
			}
			v := int64(m.GetCounter().GetValue())
			switch {
			case l["resource"] == "wasmpolicyreports":
				c.reports += v
			case l["resource"] == "wasmpolicies" && l["subresource"] == "status":
				c.status += v
			}
		}
	}
	return c
}

// policyObserver follows the policies and the reports through informers and wakes
// waiters on every event, so that a wait ends at the event that completes it.
type policyObserver struct {
	mu       sync.Mutex
	policies map[string]*policyv1alpha1.WasmPolicy
	// active[policy][component/instance] is the newest generation reported Active.
	active map[string]map[string]int64
	kick   chan struct{}
}

func newPolicyObserver() *policyObserver {
	return &policyObserver{policies: map[string]*policyv1alpha1.WasmPolicy{}, active: map[string]map[string]int64{}, kick: make(chan struct{}, 1)}
}

func (w *policyObserver) start(ctx context.Context, dyn dynamic.Interface) error {
	f := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	onPolicy := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		p := &policyv1alpha1.WasmPolicy{}
		if k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p) != nil {
			return
		}
		w.mu.Lock()
		w.policies[p.Name] = p
		w.mu.Unlock()
		w.wake()
	}
	onReport := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		r := &policyv1alpha1.WasmPolicyReport{}
		if k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r) != nil || r.Status.Phase != policyv1alpha1.PhaseActive {
			return
		}
		w.mu.Lock()
		m := w.active[r.Policy]
		if m == nil {
			m = map[string]int64{}
			w.active[r.Policy] = m
		}
		k := r.Status.Component + "/" + r.Status.Name
		m[k] = max(m[k], r.Status.ObservedGeneration)
		w.mu.Unlock()
		w.wake()
	}
	pi := f.ForResource(report.PoliciesResource).Informer()
	ri := f.ForResource(report.ReportsResource).Informer()
	if _, err := pi.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onPolicy, UpdateFunc: func(_, o any) { onPolicy(o) }}); err != nil {
		return err
	}
	if _, err := ri.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: onReport, UpdateFunc: func(_, o any) { onReport(o) }}); err != nil {
		return err
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), pi.HasSynced, ri.HasSynced) {
		return ctx.Err()
	}
	return nil
}

func (w *policyObserver) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// await returns when done holds (checked at each event, and every 100 ms), or fails after
// timeout.
func (w *policyObserver) await(ctx context.Context, timeout time.Duration, done func() bool) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		w.mu.Lock()
		ok := done()
		w.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return errors.New("timed out")
		case <-w.kick:
		case <-tick.C:
		}
	}
}

// activeCount is how many components report policy's generation gen (or newer) Active;
// called with mu held.
func (w *policyObserver) activeCount(policy string, gen int64) int {
	n := 0
	for _, g := range w.active[policy] {
		if g >= gen {
			n++
		}
	}
	return n
}

// readyAt reports whether the roll-up says gen is Active on want components; mu held.
func (w *policyObserver) readyAt(policy string, gen int64, want int) bool {
	p := w.policies[policy]
	return p != nil && p.Status.ObservedGeneration >= gen && int(p.Status.ReadyComponents) >= want && int(p.Status.TargetedComponents) == want
}

// policyBench runs the changes.
type policyBench struct {
	o        policyBenchOptions
	dyn      dynamic.Interface
	obs      *policyObserver
	reg      string
	expected map[string]int
	progress func(string, ...any)
}

// changeTimes are one change's times in milliseconds from its first apply.
type changeTimes struct {
	active, ready float64
	byHook        map[string]float64
}

// specFor is the spec of one of the benchmark's policies with the module of tag.
func (b *policyBench) specFor(policy, tag string) policyv1alpha1.WasmPolicySpec {
	var s policyv1alpha1.WasmPolicySpec
	switch policy {
	case "bench-validate":
		s.Hook = policyv1alpha1.HookAdmissionValidate
		s.Module.Image = b.reg + "/bench/validate:" + tag
		if tag == "go" {
			s.Settings = &k8sruntime.RawExtension{Raw: []byte(`{"labels":["team"]}`)}
		}
		s.FailurePolicy = policyv1alpha1.Fail
		s.Admission = &policyv1alpha1.AdmissionHook{
			Rules:             []policyv1alpha1.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Operations: []string{"CREATE"}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"wasmkube.io/bench-policy": "true"}},
		}
	case "bench-score":
		s.Hook = policyv1alpha1.HookSchedulerScore
		s.Module.Image = b.reg + "/bench/score:" + tag
	case "bench-probe":
		s.Hook = policyv1alpha1.HookKubeletProbe
		s.Module.Image = b.reg + "/bench/probe:" + tag
		s.Kubelet = &policyv1alpha1.KubeletHook{HookName: "bench-probe"}
	}
	return s
}

// put creates or updates the policy with the module of tag and returns its generation.
func (b *policyBench) put(ctx context.Context, policy, tag string) (int64, error) {
	cli := b.dyn.Resource(report.PoliciesResource)
	spec := b.specFor(policy, tag)
	for {
		cur, err := cli.Get(ctx, policy, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&policyv1alpha1.WasmPolicy{
				TypeMeta:   metav1.TypeMeta{APIVersion: policyv1alpha1.SchemeGroupVersion.String(), Kind: "WasmPolicy"},
				ObjectMeta: metav1.ObjectMeta{Name: policy}, Spec: spec})
			if err != nil {
				return 0, err
			}
			u, err := cli.Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
			if err != nil {
				return 0, err
			}
			return u.GetGeneration(), nil
		}
		if err != nil {
			return 0, err
		}
		m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(&spec)
		if err != nil {
			return 0, err
		}
		cur.Object["spec"] = m
		u, err := cli.Update(ctx, cur, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue // the roll-up wrote the status meanwhile
		}
		if err != nil {
			return 0, err
		}
		return u.GetGeneration(), nil
	}
}

// change applies tag to the three policies and waits until every component reports the
// new generations Active and the roll-up says Ready n/n.
func (b *policyBench) change(ctx context.Context, tag string) (changeTimes, error) {
	ct := changeTimes{byHook: map[string]float64{}}
	t0 := time.Now()
	gens := map[string]int64{}
	for _, h := range benchHooks {
		g, err := b.put(ctx, h.policy, tag)
		if err != nil {
			return ct, fmt.Errorf("%s: %w", h.policy, err)
		}
		gens[h.policy] = g
	}
	since := func() float64 { return float64(time.Since(t0).Microseconds()) / 1000 }
	pending := map[string]bool{}
	for _, h := range benchHooks {
		pending[h.policy] = true
	}
	if err := b.obs.await(ctx, b.o.waitTimeout, func() bool {
		for _, h := range benchHooks {
			if pending[h.policy] && b.obs.activeCount(h.policy, gens[h.policy]) >= b.expected[h.component] {
				pending[h.policy] = false
				ct.byHook[h.hook] = since()
			}
		}
		for _, p := range pending {
			if p {
				return false
			}
		}
		ct.active = since()
		return true
	}); err != nil {
		return ct, fmt.Errorf("not Active on every component: %w (%s)", err, b.describe(gens))
	}
	if err := b.obs.await(ctx, b.o.waitTimeout, func() bool {
		for _, h := range benchHooks {
			if !b.obs.readyAt(h.policy, gens[h.policy], b.expected[h.component]) {
				return false
			}
		}
		ct.ready = since()
		return true
	}); err != nil {
		return ct, fmt.Errorf("the roll-up never said Ready n/n: %w (%s)", err, b.describe(gens))
	}
	return ct, nil
}

// apply puts tag on one policy and returns the milliseconds until every component it
// targets reports it Active.
func (b *policyBench) apply(ctx context.Context, policy, tag string) (float64, error) {
	var comp string
	for _, h := range benchHooks {
		if h.policy == policy {
			comp = h.component
		}
	}
	t0 := time.Now()
	g, err := b.put(ctx, policy, tag)
	if err != nil {
		return 0, err
	}
	var d float64
	err = b.obs.await(ctx, b.o.waitTimeout, func() bool {
		if b.obs.activeCount(policy, g) < b.expected[comp] {
			return false
		}
		d = float64(time.Since(t0).Microseconds()) / 1000
		return true
	})
	if err != nil {
		return 0, fmt.Errorf("%s %s not Active on every component: %w (%s)", policy, tag, err, b.describe(map[string]int64{policy: g}))
	}
	return d, nil
}

// describe says how far each policy got, for an error.
func (b *policyBench) describe(gens map[string]int64) string {
	b.obs.mu.Lock()
	defer b.obs.mu.Unlock()
	var parts []string
	for _, h := range benchHooks {
		g, ok := gens[h.policy]
		if !ok {
			continue
		}
		msg := fmt.Sprintf("%s generation %d: %d of %d components Active", h.policy, g, b.obs.activeCount(h.policy, g), b.expected[h.component])
		if p := b.obs.policies[h.policy]; p != nil {
			for _, c := range p.Status.Conditions {
				msg += fmt.Sprintf("; %s=%s %s", c.Type, c.Status, c.Message)
			}
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// changesAndWrites is (a) and (d): o.changes changes of the three policies, each timed to
// Active on every component and to Ready n/n, the report and status writes they cost, and
// those written during o.idle without changes.
func (b *policyBench) changesAndWrites(ctx context.Context, res *PolicyBenchResult) error {
	if b.o.cpuProfile != "" {
		pf, err := os.Create(b.o.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile() // on an error; stopping twice is harmless
	}
	before := policyWrites()
	var active, ready []float64
	byHook := map[string][]float64{}
	for i := 0; i < b.o.changes; i++ {
		time.Sleep(b.o.pause)
		tag := "v2"
		if i%2 == 1 {
			tag = "v1"
		}
		m, err := b.change(ctx, tag)
		if err != nil {
			return fmt.Errorf("change %d: %w", i+1, err)
		}
		active = append(active, m.active)
		ready = append(ready, m.ready)
		for h, d := range m.byHook {
			byHook[h] = append(byHook[h], d)
		}
		b.progress("(a) change %d: Active everywhere %.0f ms, Ready %.0f ms", i+1, m.active, m.ready)
	}
	if b.o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	// Writes of a change that land after Ready (a Settle-delayed report) belong to it.
	time.Sleep(3 * time.Second)
	after := policyWrites()
	targets := b.o.servers + 1 + b.o.nodes
	res.Changes = b.o.changes
	res.ActiveP50ms, res.ActiveP99ms = quantile(active, 0.5), quantile(active, 0.99)
	res.ReadyP50ms, res.ReadyP99ms = quantile(ready, 0.5), quantile(ready, 0.99)
	res.ActiveByHookP50, res.ActiveByHookP99 = map[string]float64{}, map[string]float64{}
	for h, ds := range byHook {
		res.ActiveByHookP50[h], res.ActiveByHookP99[h] = quantile(ds, 0.5), quantile(ds, 0.99)
	}
	res.ReportWritesPerComponentChange = float64(after.reports-before.reports) / float64(b.o.changes*targets)
	res.StatusWritesPerPolicyChange = float64(after.status-before.status) / float64(b.o.changes*len(benchHooks))
	b.progress("(d) %d report writes and %d status writes for %d changes of %d policies on %d components",
		after.reports-before.reports, after.status-before.status, b.o.changes, len(benchHooks), targets)

	b.progress("(d) idle for %s", b.o.idle)
	time.Sleep(b.o.idle)
	idle := policyWrites()
	res.IdleSeconds = b.o.idle.Seconds()
	res.IdleReportWrites, res.IdleStatusWrites = idle.reports-after.reports, idle.status-after.status

	return nil
}

// writersDuringSwaps is (c): writers create ConfigMaps in the benchmark's namespace, every
// other one without the label team, spread over the API servers, while the validate
// policy is swapped between its WAT and Go modules.
func (b *policyBench) writersDuringSwaps(ctx context.Context, servers []*apiserver.Server, res *PolicyBenchResult) error {
	var clients []kubernetes.Interface
	for _, s := range servers {
		cfg := rest.CopyConfig(s.AdminRESTConfig())
		cfg.QPS, cfg.Burst = 2000, 4000
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	var requests, failed, wrongAdmit, wrongRefuse atomic.Int64
	var firstFailure atomic.Pointer[string]
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := 0; w < b.o.writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[w%len(clients)].CoreV1().ConfigMaps(benchNamespace)
			for i := 0; wctx.Err() == nil; i++ {
				labelled := i%2 == 0
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%d", w, i)}}
				if labelled {
					cm.Labels = map[string]string{"team": "bench"}
				}
				_, err := c.Create(ctx, cm, metav1.CreateOptions{})
				requests.Add(1)
				refused := err != nil && strings.Contains(err.Error(), "must carry label team")
				switch {
				case err == nil && !labelled:
					wrongAdmit.Add(1)
				case refused && labelled:
					wrongRefuse.Add(1)
				case err != nil && !refused:
					failed.Add(1)
					msg := err.Error()
					firstFailure.CompareAndSwap(nil, &msg)
				}
			}
		}()
	}
	var swaps []float64
	tags := []string{"go", "v1"} // Go require-labels, require-team.wat
	for i := 0; i < b.o.swaps; i++ {
		time.Sleep(b.o.pause)
		d, err := b.apply(ctx, "bench-validate", tags[i%2])
		if err != nil {
			stop()
			wg.Wait()
			return fmt.Errorf("swap %d: %w", i+1, err)
		}
		swaps = append(swaps, d)
		b.progress("(c) swap %d to %s: Active on every API server after %.0f ms; %d requests so far", i+1, tags[i%2], d, requests.Load())
	}
	time.Sleep(b.o.pause)
	stop()
	wg.Wait()
	res.Writers, res.SwapCount = b.o.writers, b.o.swaps
	res.SwapP50ms, res.SwapP99ms = quantile(swaps, 0.5), quantile(swaps, 0.99)
	res.Requests, res.Failed, res.WronglyAdmitted, res.WronglyRefused = requests.Load(), failed.Load(), wrongAdmit.Load(), wrongRefuse.Load()
	if f := firstFailure.Load(); f != nil {
		b.progress("(c) first failed request: %s", *f)
	}
	return nil
}
