package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The side by side of `bench scheduler --scheduler`: the same API server, hollow nodes and
// pods, scheduled by wasmkube's scheduler in the bench's process (in-process, the
// default), by wasmkube's scheduler as a process of its own (`wasmkube scheduler`, this
// binary) or by upstream's kube-scheduler (--upstream-binary, a process of its own). The
// two child processes run under the same credential (system:kube-scheduler, through
// RBAC), with the same client rate limit (5000 QPS, burst 10000), and their CPU is read
// from /proc, so that the two are measured alike; in process, the scheduler's CPU is its
// share of the bench's CPU profile (its goroutines' label), which leaves out its share of
// the GC. With --backlog every measured pod is created before the scheduler starts, and
// the run measures how fast it drains them: the scheduler alone, not the API server's
// create path (docs/benchmarks.md, "The backlog drain and upstream's scheduler").

// The schedulers of --scheduler.
const (
	schedInProcess = "in-process"
	schedWasmkube  = "wasmkube"
	schedUpstream  = "upstream"
)

// benchScheduler is the scheduler a run measures.
type benchScheduler interface {
	// Start starts it. With wait, it returns once the scheduler has bound a pod (or, in
	// process, has seen every node); else at once.
	Start(ctx context.Context, wait bool) error
	// CPU is the scheduler's CPU time so far; ok is false in process (the CPU profile's
	// labels split the bench's CPU there).
	CPU() (cpu time.Duration, ok bool)
	// ActiveQueue is the length of its activeQ, or -1 when it cannot be read.
	ActiveQueue() int
	// Failed is why it stopped early (nil while it runs).
	Failed() error
	// BatchAttempts are its cycles by what batching did (nil when not readable).
	BatchAttempts() map[string]float64
	// Stop stops it and waits until it has stopped.
	Stop()
}

// inProcessScheduler is wasmkube's scheduler in the bench's process.
type inProcessScheduler struct {
	o       schedBenchOptions
	cfg     *rest.Config
	dataDir string
	log     *slog.Logger

	sched  *scheduler.Scheduler
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (s *inProcessScheduler) Start(ctx context.Context, wait bool) error {
	var err error
	// Every goroutine it starts inherits the label: its share of the CPU profile.
	pprof.Do(context.Background(), pprof.Labels("component", compScheduler), func(context.Context) {
		var host *wasmhost.Host
		host, err = wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: filepath.Join(s.dataDir, "wasm-cache"), Logger: s.log})
		if err != nil {
			return
		}
		var sctx context.Context
		sctx, s.cancel = context.WithCancel(ctx)
		s.sched, err = scheduler.New(sctx, scheduler.Options{RESTConfig: s.cfg, ConfigFile: s.o.configFile, Config: s.o.configData,
			WasmLoader: schedwasm.NewLoader(host).Load, Logger: s.log})
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if err := s.sched.Run(sctx); err != nil {
				s.log.Error("scheduler stopped", "err", err)
			}
		}()
	})
	if err != nil || !wait {
		return err
	}
	for s.sched.NodeCount() < s.o.nodes {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

func (s *inProcessScheduler) CPU() (time.Duration, bool) { return 0, false }

func (s *inProcessScheduler) ActiveQueue() int {
	if s.sched == nil {
		return -1
	}
	a, _, _ := s.sched.Pending()
	return a
}

func (s *inProcessScheduler) Failed() error { return nil }

func (s *inProcessScheduler) BatchAttempts() map[string]float64 {
	if s.sched == nil {
		return nil
	}
	return batchAttempts(s.sched.MetricsGatherer())
}

func (s *inProcessScheduler) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
}

// childScheduler is a scheduler in a process of its own.
type childScheduler struct {
	name    string
	argv    []string
	logPath string
	client  kubernetes.Interface
	// metricsURL is the child's /metrics (wasmkube's only), for its batching counters.
	metricsURL string

	cmd    *exec.Cmd
	exited chan struct{}
	err    error // set before exited is closed
	// lastCPU is the last CPU time read from /proc, kept for after the process ended.
	mu      sync.Mutex
	lastCPU time.Duration
}

func (c *childScheduler) Start(ctx context.Context, wait bool) error {
	logf, err := os.Create(c.logPath)
	if err != nil {
		return err
	}
	c.cmd = exec.Command(c.argv[0], c.argv[1:]...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start the %s scheduler (%s): %w", c.name, c.argv[0], err)
	}
	c.exited = make(chan struct{})
	go func() {
		err := c.cmd.Wait()
		logf.Close()
		if err == nil {
			err = errors.New("exited")
		}
		c.err = fmt.Errorf("the %s scheduler stopped: %w; the end of its log (%s):\n%s", c.name, err, c.logPath, logTail(c.logPath, 2048))
		close(c.exited)
	}()
	if !wait {
		return nil
	}
	return waitUntilScheduling(ctx, c.client, c)
}

func (c *childScheduler) CPU() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil || c.cmd.Process == nil {
		return 0, true
	}
	if d, err := procCPU(c.cmd.Process.Pid); err == nil && c.Failed() == nil {
		c.lastCPU = d
	}
	return c.lastCPU, true
}

func (c *childScheduler) ActiveQueue() int { return -1 }

func (c *childScheduler) Failed() error {
	if c.exited == nil {
		return nil
	}
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

func (c *childScheduler) BatchAttempts() map[string]float64 {
	if c.metricsURL == "" || c.Failed() != nil {
		return nil
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(c.metricsURL)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil
	}
	return parseBatchAttempts(string(b))
}

// parseBatchAttempts sums scheduler_batch_attempts_total by its result label from a
// Prometheus text exposition (what batchAttempts reads from a registry in process).
func parseBatchAttempts(text string) map[string]float64 {
	const name = "scheduler_batch_attempts_total{"
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) {
			continue
		}
		_, rest, ok := strings.Cut(line, `result="`)
		if !ok {
			continue
		}
		result, _, _ := strings.Cut(rest, `"`)
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			out[result] += v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *childScheduler) Stop() {
	if c.exited == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// waitUntilScheduling creates a pod outside the measured ones and waits until s binds it:
// a scheduler that has just started schedules nothing until its informers have synced.
func waitUntilScheduling(ctx context.Context, client kubernetes.Interface, s benchScheduler) error {
	p := benchPod(0)
	p.Name, p.Labels = "bench-warmup", map[string]string{"app": "bench-warmup"}
	pods := client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod %s: %w", p.Name, err)
	}
	for {
		got, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil && got.Spec.NodeName != "" {
			return nil
		}
		if err := s.Failed(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// newBenchScheduler is the scheduler of o.scheduler. Child processes get a kubeconfig of
// the system:kube-scheduler credential (schedCfg) in dataDir, and upstream's a
// KubeSchedulerConfiguration beside it.
func newBenchScheduler(o schedBenchOptions, adminCfg, schedCfg *rest.Config, client kubernetes.Interface, dataDir string, log *slog.Logger) (benchScheduler, error) {
	if o.scheduler == schedInProcess {
		return &inProcessScheduler{o: o, cfg: adminCfg, dataDir: dataDir, log: log}, nil
	}
	kubeconfig := filepath.Join(dataDir, "scheduler.kubeconfig")
	if err := writeKubeconfig(schedCfg, kubeconfig); err != nil {
		return nil, err
	}
	c := &childScheduler{name: o.scheduler, client: client, logPath: filepath.Join(dataDir, o.scheduler+"-scheduler.log")}
	switch o.scheduler {
	case schedWasmkube:
		self, err := os.Executable()
		if err != nil {
			return nil, err
		}
		configFile := o.configFile
		if configFile == "" && len(o.configData) > 0 {
			configFile = filepath.Join(dataDir, "scheduler.yaml")
			if err := os.WriteFile(configFile, o.configData, 0o600); err != nil {
				return nil, err
			}
		}
		c.argv = wasmkubeSchedulerArgs(self, kubeconfig, configFile, filepath.Join(dataDir, "wasm-cache"), o.logLevel, benchChildMetricsAddr)
		c.metricsURL = "http://" + benchChildMetricsAddr + "/metrics"
	case schedUpstream:
		cfgPath := filepath.Join(dataDir, "kube-scheduler.yaml")
		if err := os.WriteFile(cfgPath, upstreamSchedulerConfig(kubeconfig), 0o600); err != nil {
			return nil, err
		}
		c.argv = upstreamSchedulerArgs(o.upstreamBinary, cfgPath)
	}
	return c, nil
}

// benchChildMetricsAddr is where wasmkube's scheduler as a child process serves /metrics,
// read once at the end for its batching counters (upstream's serves nothing).
const benchChildMetricsAddr = "127.0.0.1:27710"

// wasmkubeSchedulerArgs is the command line of wasmkube's scheduler as a child process.
func wasmkubeSchedulerArgs(self, kubeconfig, configFile, wasmCache, logLevel, metricsAddr string) []string {
	argv := []string{self, "scheduler", "--kubeconfig", kubeconfig, "--metrics-addr", metricsAddr, "--log-level", logLevel, "--wasm-cache-dir", wasmCache}
	if configFile != "" {
		argv = append(argv, "--config", configFile)
	}
	return argv
}

// upstreamSchedulerArgs is upstream kube-scheduler's command line: its configuration
// file, and no HTTPS endpoint (--secure-port 0), as wasmkube's child runs without one.
func upstreamSchedulerArgs(bin, configFile string) []string {
	return []string{bin, "--config", configFile, "--secure-port", "0", "-v", "1"}
}

// upstreamSchedulerConfig is upstream's KubeSchedulerConfiguration for the bench: its
// default profile, no leader election (neither child elects), and the client rate limit
// wasmkube's scheduler uses (5000 QPS, burst 10000) instead of upstream's default 50/100,
// which alone would cap its bindings at 50 a second.
func upstreamSchedulerConfig(kubeconfig string) []byte {
	return []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: ` + strconv.Quote(kubeconfig) + `
  qps: 5000
  burst: 10000
leaderElection:
  leaderElect: false
`)
}

// writeKubeconfig writes cfg (a bearer token and the server's CA) as a kubeconfig file.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["wasmkube"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["scheduler"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile,
		ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["wasmkube"] = &clientcmdapi.Context{Cluster: "wasmkube", AuthInfo: "scheduler"}
	kc.CurrentContext = "wasmkube"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write the scheduler's kubeconfig %s: %w", path, err)
	}
	return nil
}

// procCPU is the user+system CPU time of process pid, all its threads.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU reads utime and stime (fields 14 and 15, in clock ticks of 1/100 s,
// the USER_HZ Linux reports in whatever its kernel's HZ) from a /proc/PID/stat line. The
// command name (field 2, in parentheses) may hold spaces, so fields count from its end.
func parseProcStatCPU(s string) (time.Duration, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat line %.40q: no command name", s)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat line %.40q: %d fields after the command name, want at least 13", s, len(f))
	}
	ut, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat utime %q: %w", f[11], err)
	}
	st, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat stime %q: %w", f[12], err)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// logTail is the last n bytes of a file.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, 0)
	}
	b := make([]byte, n)
	k, _ := f.Read(b)
	return string(b[:k])
}

// bindInitialPods creates n pods (init-<i>) and binds them to the nodes in turn, without a
// scheduler: the cluster's state before a backlog is created, when no scheduler may run.
func bindInitialPods(ctx context.Context, client kubernetes.Interface, n, clients int) error {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return errors.New("initial pods: no nodes")
	}
	return forEach(ctx, n, clients, func(i int) error {
		p := benchPod(i)
		p.Name = fmt.Sprintf("init-%d", i)
		pods := client.CoreV1().Pods("default")
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s: %w", p.Name, err)
		}
		b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Target: v1.ObjectReference{Kind: "Node", Name: nodes.Items[i%len(nodes.Items)].Name}}
		if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bind pod %s: %w", p.Name, err)
		}
		return nil
	})
}

// forEach runs f(0) .. f(n-1) on up to workers goroutines; the first error stops it.
func forEach(ctx context.Context, n, workers int, f func(i int) error) error {
	var mu sync.Mutex
	next := 0
	var first error
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i, stop := next, first != nil
				next++
				mu.Unlock()
				if stop || i >= n || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// checkSchedulerFlags refuses what --scheduler cannot do.
func checkSchedulerFlags(o schedBenchOptions) error {
	switch o.scheduler {
	case schedInProcess, schedWasmkube:
	case schedUpstream:
		if o.configFile != "" || o.batching != "" {
			return errors.New("--scheduler upstream: --config and --batching set wasmkube's profiles; upstream's scheduler runs its default profile")
		}
		if _, err := os.Stat(o.upstreamBinary); err != nil {
			return fmt.Errorf("--upstream-binary: %w (scripts/upstream-scheduler.sh builds upstream kube-scheduler v1.37.2 into bin/)", err)
		}
	default:
		return fmt.Errorf("--scheduler %q: must be in-process, wasmkube or upstream", o.scheduler)
	}
	return nil
}

// formatSchedulerLine is the text report's line on the scheduler itself.
func formatSchedulerLine(res *SchedBenchResult) string {
	s := "scheduler " + res.Scheduler
	if res.Backlog {
		s += " (draining a backlog)"
	}
	s += fmt.Sprintf(": first pod bound after %.1f s, then %.0f pods/s; scheduler CPU %.3f ms per pod", res.FirstBoundSeconds, res.DrainPodsPerSecond, res.SchedulerCPUPerPodMs)
	if res.SchedulerDrainCPUPerPodMs > 0 {
		s += fmt.Sprintf(" (%.3f ms from the first binding on)", res.SchedulerDrainCPUPerPodMs)
	}
	return s + "\n"
}
