package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/controller/nodeipam"
	"github.com/wasmkube/wasmkube/core/leaderelect"
)

func init() {
	var (
		kubeconfig  string
		configFile  string
		leaderElect bool
		metricsAddr string
		profilingOn bool
		grace       time.Duration
		tolSeconds  int64
		workers     int
		verbose     bool
		clusterCIDR string
		maskSize    int
		// insecureRegistries: plain HTTP when resolving WasmPolicy tags.
		insecureRegistries []string
	)
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers: ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob, node lifecycle, node IPAM, garbage collector, pod GC, namespace, endpoints",
		Long: `Run wasmkube's controllers against an API server.

With --leader-elect only the holder of the Lease kube-system/wasmkube-controller-manager acts; an
instance that loses the Lease stops its controllers and campaigns again (the next term
starts them afresh). /healthz at --metrics-addr is not ok while it starts, stops a term or
has stopped (a standby is ok).

Config file keys (flags override them):
  controller.nodeMonitorGracePeriod    heartbeat grace before a node is Unknown (default 40s)
  controller.defaultTolerationSeconds  eviction delay for pods without a not-ready/unreachable
                                       toleration (default 300)
  controller.clusterCIDR               node IPAM's range for the Nodes' spec.podCIDR (default 10.42.0.0/16)
  controller.nodeCIDRMaskSize          size of each Node's pod subnet (default 24)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The same keys and checks as `wasmkube up` (readControllerSettings in up.go).
			cs, err := readControllerSettings(configFile)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("node-monitor-grace-period") {
				if grace <= 0 {
					return fmt.Errorf("--node-monitor-grace-period %s: must be positive", grace)
				}
				cs.nodeMonitorGracePeriod = grace
			}
			if cmd.Flags().Changed("default-toleration-seconds") {
				if tolSeconds < 0 {
					return fmt.Errorf("--default-toleration-seconds %d: must not be negative", tolSeconds)
				}
				cs.tolerationSeconds = tolSeconds
			}
			if cmd.Flags().Changed("cluster-cidr") {
				cs.clusterCIDR = clusterCIDR
			}
			if cmd.Flags().Changed("node-cidr-mask-size") {
				cs.nodeCIDRMaskSize = maskSize
			}
			if err := cs.checkIPAM("--cluster-cidr/--node-cidr-mask-size"); err != nil {
				return err
			}
			g, tol := cs.nodeMonitorGracePeriod, cs.tolerationSeconds
			if kubeconfig == "" {
				return errors.New("--kubeconfig is required (the admin kubeconfig is in the API server's data dir)")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
			}
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			ctx, stop := signalContext()
			defer stop()

			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			status := leaderelect.NewStatus()
			if metricsAddr != "" {
				pprof, err := pprofRoutes(cfg, profilingOn)
				if err != nil {
					return err
				}
				if err := serveMetrics(ctx, metricsAddr, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), componentHealth("controller-manager", status.Check), log, pprof...); err != nil {
					return err
				}
			}
			return controller.Run(ctx, controller.Options{
				RESTConfig: cfg, LeaderElect: leaderElect, NodeMonitorGracePeriod: g,
				DefaultTolerationSeconds: &tol, Workers: workers, Logger: log, Registerer: reg,
				Status: status, ClusterCIDR: cs.clusterCIDR, NodeCIDRMaskSize: cs.nodeCIDRMaskSize,
				InsecureRegistries: insecureRegistries,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	f.StringVar(&configFile, "config", "", "wasmkube YAML config file")
	f.BoolVar(&leaderElect, "leader-elect", false, "wait for the "+controller.LeaseName+" Lease in kube-system before acting")
	f.StringVar(&metricsAddr, "metrics-addr", "127.0.0.1:10257", "serve /metrics and /healthz here (empty: off)")
	f.BoolVar(&profilingOn, "profiling", true, "serve /debug/pprof/ at --metrics-addr to callers allowed get on that nonResourceURL (as upstream's --profiling)")
	f.DurationVar(&grace, "node-monitor-grace-period", 40*time.Second, "overrides controller.nodeMonitorGracePeriod")
	f.Int64Var(&tolSeconds, "default-toleration-seconds", 300, "overrides controller.defaultTolerationSeconds")
	f.IntVar(&workers, "workers", 5, "workers per controller")
	f.StringVar(&clusterCIDR, "cluster-cidr", nodeipam.DefaultClusterCIDR, "overrides controller.clusterCIDR: node IPAM gives each Node a pod subnet out of it")
	f.IntVar(&maskSize, "node-cidr-mask-size", nodeipam.DefaultNodeMaskSize, "overrides controller.nodeCIDRMaskSize: the prefix length of each Node's pod subnet")
	f.StringSliceVar(&insecureRegistries, "insecure-registry", nil, "a registry (host:port) that may be reached over plain HTTP when a WasmPolicy's image tag is resolved (repeatable; loopback registries always may)")
	f.BoolVarP(&verbose, "verbose", "v", false, "debug logging")
	rootCmd.AddCommand(cmd)
}
