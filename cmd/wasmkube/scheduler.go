package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

func init() {
	var kubeconfig, configFile, metricsAddr, logLevel, wasmCache string
	var insecureRegistries []string
	profilingOn := true
	var leaderElect bool
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler against an API server",
		Long: `Run the scheduler: it watches pending pods and nodes through the API server named by
--kubeconfig, runs each pod through the profile named by its spec.schedulerName (built-in and
wasm plugins from the scheduler: section of --config), and binds it. Editing --config swaps the
profiles live; a config that does not load leaves the previous one in force (see the
FailedConfigReload event and wasmkube_scheduler_config_reloads_total). With --leader-elect,
several schedulers can run and only the holder of the Lease kube-system/wasmkube-scheduler
schedules; a scheduler that loses the Lease (another one took it, or it could not renew it
for the renew deadline, as while etcd has no quorum) stops scheduling and campaigns again.
Prometheus metrics are served at --metrics-addr/metrics, and /healthz there is not ok while
the scheduler starts, stops a term or has stopped (a standby is ok).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := schedLogger(logLevel)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			// The host's series (wasmkube_plugin_failures_total) are served beside the scheduler's.
			hostMetrics := prometheus.NewRegistry()
			host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension},
				CacheDir: wasmCache, Logger: log, Registerer: hostMetrics})
			if err != nil {
				return err
			}
			s, err := scheduler.New(ctx, scheduler.Options{
				Kubeconfig: kubeconfig, ConfigFile: configFile, LeaderElect: leaderElect,
				WasmLoader: schedwasm.NewLoader(host).Load, Logger: log,
			})
			if err != nil {
				return err
			}
			cfg, cfgErr := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if metricsAddr != "" {
				var pprof []route
				if cfgErr == nil {
					if pprof, err = pprofRoutes(cfg, profilingOn); err != nil {
						return err
					}
				}
				if err := serveMetrics(ctx, metricsAddr, gatherersHandler(s.MetricsGatherer(), hostMetrics), schedulerHealth(s), log, pprof...); err != nil {
					return err
				}
			}
			if err := cfgErr; err != nil {
				log.Error("scheduler: WasmPolicies not loaded", "err", err)
			} else {
				modules := ""
				if wasmCache != "" {
					modules = filepath.Join(wasmCache, "modules")
				}
				go runSchedulerPolicies(ctx, cfg, s, moduleCache(modules, insecureRegistries), hostMetrics, log)
			}
			return s.Run(ctx)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server (required)")
	f.StringVar(&configFile, "config", "", "wasmkube YAML config file; its scheduler: section holds the profiles (watched for changes)")
	f.BoolVar(&leaderElect, "leader-elect", false, "take the Lease kube-system/wasmkube-scheduler before scheduling")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:10259", "address for /metrics and /healthz (empty: off)")
	f.BoolVar(&profilingOn, "profiling", true, "serve /debug/pprof/ at --metrics-addr to callers allowed get on that nonResourceURL (as upstream's --profiling)")
	f.StringVar(&wasmCache, "wasm-cache-dir", "", "directory for compiled wasm modules (empty: in memory)")
	f.StringSliceVar(&insecureRegistries, "insecure-registry", nil, "a registry (host:port) that may be reached over plain HTTP for WasmPolicy modules (repeatable; loopback registries always may)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	_ = cmd.MarkFlagRequired("kubeconfig")
	rootCmd.AddCommand(cmd)
}

// schedLogger is a text logger on stderr at a level named by a flag.
func schedLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: must be debug, info, warn or error", level)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
	// client-go (leader election, reflectors, the event recorder) logs through klog;
	// send it to the same place in the same format.
	klog.SetSlogLogger(log)
	return log, nil
}

// runSchedulerPolicies loads the WasmPolicies of the scheduler hooks that name one of s's
// profiles into s (the API tier after the config file's plugins; modules fetched and cached
// as cache says, or file modules only when its Dir is empty), until ctx ends. A standby scheduler
// loads them too, so that it is ready when it takes the Lease.
func runSchedulerPolicies(ctx context.Context, cfg *rest.Config, s *scheduler.Scheduler, cache wasmoci.Options, reg prometheus.Registerer, log *slog.Logger) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Error("scheduler: no client for WasmPolicies; only the config file's plugins are loaded", "err", err)
		return
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error("scheduler: no client for WasmPolicies; only the config file's plugins are loaded", "err", err)
		return
	}
	// Its reports on the policies, and the identity Lease (with its profiles) by which the
	// wasmpolicy controller counts it (plugins/wasmpolicy/report).
	sink, err := report.New(report.Options{Client: dyn, Component: wasmpolicy.ComponentScheduler, Instance: s.Identity(), Logger: log})
	if err != nil {
		log.Error("scheduler: no WasmPolicy status reports", "err", err)
		return
	}
	go sink.Run(ctx)
	go report.Heartbeat(ctx, client, report.Identity{Component: wasmpolicy.ComponentScheduler, Instance: s.Identity(), SchedulerNames: s.Profiles}, log)
	loader, err := wasmpolicy.New(wasmpolicy.Config{
		Component: wasmpolicy.ComponentScheduler, Name: s.Identity(), Dynamic: dyn, Client: client,
		Target:         &schedwasm.APITier{Scheduler: s, Metrics: wasmpolicy.NewMetrics(reg)},
		SchedulerNames: s.Profiles,
		// A config file reload may add or remove the profile a policy names.
		Resync: 30 * time.Second,
		Cache:  cache,
		Sink:   wasmpolicy.RecordSwaps(sink, s.ExplorerRecorder),
		Logger: log,
	})
	if err != nil {
		log.Error("scheduler: WasmPolicies not loaded", "err", err)
		return
	}
	loader.Run(ctx)
}
