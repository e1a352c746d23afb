package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

func init() {
	var kubeconfig, prefix, logLevel, policyCache string
	var count, workers int
	var loadPolicies bool
	var leaseInterval time.Duration
	cmd := &cobra.Command{
		Use:   "hollow-nodes",
		Short: "Run simulated nodes (no containers) for scale work",
		Long: `Register --count simulated nodes named <prefix><i> (cpu 4, memory 16Gi, pods 110, labels
topology.kubernetes.io/zone=zone-<i mod 3> and kubernetes.io/hostname), keep their Leases in
kube-node-lease fresh, mark pods bound to them Running with a fake pod IP, and finish their
deletion. Stopping this process stops the heartbeats: to the control plane the nodes fail.

With --load-policies every node also loads the WasmPolicies of the kubelet hooks that select
it, as a real kubelet does, and writes its WasmPolicyReports: the policy's READY n/m counts
it. Hooks are never run (the pods have no containers); a policy is fetched, compiled,
initialized and smoke-called. Modules are cached in --policy-cache-dir.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := schedLogger(logLevel)
			if err != nil {
				return err
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			opts := hollow.Options{Count: count, Prefix: prefix, Workers: workers, LeaseInterval: leaseInterval, Logger: log}
			if loadPolicies {
				if policyCache == "" {
					dir, err := os.MkdirTemp("", "wasmkube-hollow-policies-")
					if err != nil {
						return err
					}
					defer os.RemoveAll(dir)
					policyCache = dir
				}
				opts.Policies = &hollow.PolicyOptions{CacheDir: policyCache}
			}
			ctx, cancel := signalContext()
			defer cancel()
			return hollow.Run(ctx, cfg, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server (required)")
	f.IntVar(&count, "count", 1, "number of nodes")
	f.StringVar(&prefix, "prefix", "hollow-", "node name prefix")
	f.IntVar(&workers, "workers", 8, "concurrent pod status updates")
	f.DurationVar(&leaseInterval, "lease-interval", 10*time.Second, "how often each node renews its Lease")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.BoolVar(&loadPolicies, "load-policies", false, "load the kubelet WasmPolicies that select each node and report on them")
	f.StringVar(&policyCache, "policy-cache-dir", "", "module and compiled-code cache of --load-policies (default: a temporary directory, removed at exit)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	rootCmd.AddCommand(cmd)
}
