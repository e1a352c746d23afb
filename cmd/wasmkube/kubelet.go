package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/cni"
	kcontainerd "github.com/wasmkube/wasmkube/kubelet/containerd"
	"github.com/wasmkube/wasmkube/kubelet/dns"
	"github.com/wasmkube/wasmkube/kubelet/nodecred"
	"github.com/wasmkube/wasmkube/kubelet/overlay"
	"github.com/wasmkube/wasmkube/kubelet/proxy"
	kruntime "github.com/wasmkube/wasmkube/kubelet/runtime"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

type kubeletFlags struct {
	kubeconfig, server, token          string
	nodeName, nodeIP, rootDir          string
	containerdAddr, containerdNS       string
	podCIDR, bridge, cniBinDir, images string
	listen, logLevel, configFile       string
	serviceCIDR, clusterDomain         string
	cleanupOnExit, ipMasq              bool
	noProfiling                        bool
	cleanupOnly                        bool
	warmSandboxes                      int
	ociRuntime                         string
	networkBackend, vxlanDevice        string
	clusterCIDR                        string
	insecureRegistries                 []string // plain HTTP for WasmPolicy modules
	vxlanID                            int
	backendSet                         bool // --network-backend given (over the config's network.backend)
}

func init() {
	var f kubeletFlags
	cmd := &cobra.Command{
		Use:   "kubelet",
		Short: "Run the node agent: pods of this node on containerd with CNI bridge networking",
		Long: `Run the kubelet until SIGINT/SIGTERM. It registers the node, renews its lease, runs the
pods bound to it, and serves their logs over HTTPS.

Credentials: --kubeconfig FILE (a node credential, used as is, also by the NetworkPolicy
enforcer, which then needs RBAC's system:wasmkube:network-policy-agent role), or --server URL --token
K10<hash>::<secret> (the join token in the API server's data dir) to join a cluster from another
host. A joined kubelet keeps its credential in <root-dir>/node-credential.json (a restart does not
join again) and renews it two thirds into its lifetime (docs/security.md).

Runtime: --containerd-address SOCK uses a running containerd; without it the kubelet starts and
supervises its own under <root-dir>/containerd. Pods keep running when the kubelet stops (a
restarted kubelet adopts them) unless --cleanup-on-exit is set.

--cleanup-only does a kubelet's exit clean-up for one that is gone (killed with SIGKILL,
crashed) and exits: with the same --node-name, --root-dir and --bridge (and in the same
network namespace), it removes the node's pods, their shims, mounts and addresses, the pod
bridge and the node's nftables tables. It needs no credential and no API server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.backendSet = cmd.Flags().Changed("network-backend")
			return runKubelet(f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig with the node's credential")
	fl.StringVar(&f.server, "server", "", "API server URL, to join with --token")
	fl.StringVar(&f.token, "token", "", "join token K10<sha256 of the CA>::<secret>")
	fl.StringVar(&f.nodeName, "node-name", "", "node name (default: the host name)")
	fl.StringVar(&f.nodeIP, "node-ip", "", "the node's InternalIP, where the API server reaches this kubelet and other nodes route this node's pods (default: the --listen address if it names one, else the address of the default route's interface, else 127.0.0.1)")
	fl.StringVar(&f.rootDir, "root-dir", "/var/lib/wasmkube/kubelet", "pods, logs, sandboxes, CNI state and the serving certificate")
	fl.StringSliceVar(&f.insecureRegistries, "insecure-registry", nil, "a registry (host:port) that may be reached over plain HTTP for WasmPolicy modules (repeatable; loopback registries always may)")
	fl.StringVar(&f.containerdAddr, "containerd-address", "", "containerd socket (default: start a private containerd under the root dir)")
	fl.StringVar(&f.containerdNS, "containerd-namespace", "", "containerd namespace (default: the node name)")
	fl.StringVar(&f.podCIDR, "pod-cidr", "", "this node's pod subnet, overriding node IPAM for one host (refused if the Node already has another); default: the Node's spec.podCIDR, waited for")
	fl.StringVar(&f.networkBackend, "network-backend", overlay.DefaultBackend, "how pods reach other nodes' pods: vxlan (a VXLAN device, hosts that route IP), host-gw (a route per node, hosts on one L2 segment) or none; overrides the config's network.backend")
	fl.StringVar(&f.vxlanDevice, "vxlan-device", overlay.DefaultVXLANDevice, "the vxlan backend's device (UDP port 8472)")
	fl.IntVar(&f.vxlanID, "vxlan-id", overlay.DefaultVXLANID, "the vxlan backend's VNI, the same on every node of the cluster (two clusters sharing a network namespace need their own)")
	fl.StringVar(&f.bridge, "bridge", cni.DefaultBridge, "Linux bridge for pods")
	fl.StringVar(&f.cniBinDir, "cni-bin-dir", cni.DefaultBinDir, "CNI plugin binaries")
	fl.StringVar(&f.images, "images-dir", "", "OCI archives to import at start when missing (default: images/ beside the binary)")
	fl.StringVar(&f.listen, "listen", ":10250", "HTTPS listen address (logs, healthz)")
	fl.BoolVar(&f.cleanupOnExit, "cleanup-on-exit", false, "stop and remove this node's pods when the kubelet exits")
	fl.Var(negatedBool{&f.noProfiling}, "profiling", "serve /debug/pprof/ at --listen to callers allowed get on nodes/proxy of this node (as upstream's enableProfilingHandler)")
	fl.Lookup("profiling").NoOptDefVal = "true"
	fl.Lookup("profiling").DefValue = "true"
	fl.BoolVar(&f.cleanupOnly, "cleanup-only", false, "remove what a dead kubelet of this --node-name and --root-dir left (pods, shims, mounts, bridge, nftables tables) and exit; no API server needed")
	fl.IntVar(&f.warmSandboxes, "warm-sandboxes", kubelet.DefaultWarmSandboxes, "pod sandboxes (network wired, pause running) kept ready for the next pods; 0 turns the pool off")
	fl.StringVar(&f.ociRuntime, "oci-runtime", kruntime.OCIRuntimeRunc, "OCI runtime new containers are created with: runc, crun, or auto (crun when installed, else runc)")
	fl.StringVar(&f.serviceCIDR, "service-cidr", proxy.DefaultServiceCIDR, "the API server's service range: traffic to it is load-balanced by the node proxy or refused, never routed off the node")
	fl.StringVar(&f.clusterDomain, "cluster-domain", dns.DefaultDomain, "the cluster DNS domain the node's DNS server answers")
	fl.BoolVar(&f.ipMasq, "ip-masq", false, "masquerade pod traffic that leaves the cluster CIDR (off: pods reach only the cluster's machines); traffic between pods is never masqueraded")
	fl.StringVar(&f.clusterCIDR, "cluster-cidr", overlay.DefaultClusterCIDR, "all nodes' pod subnets (the controller manager's --cluster-cidr): with --ip-masq, traffic to it is not masqueraded")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&f.configFile, "config", "", "wasmkube YAML config file; its kubelet: section declares the wasm probe and preStop plugins (watched for changes)")
	rootCmd.AddCommand(cmd)
}

func runKubelet(f kubeletFlags) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: must be debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if !f.backendSet {
		b, err := readNetworkBackend(f.configFile)
		if err != nil {
			return err
		}
		f.networkBackend = b
	}
	if err := overlay.CheckBackend(f.networkBackend); err != nil {
		return fmt.Errorf("--network-backend: %w", err)
	}
	if f.nodeIP == "" {
		f.nodeIP = defaultNodeIP(f.listen, log)
	}
	if f.nodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("node name: %w (set --node-name)", err)
		}
		f.nodeName = strings.ToLower(h)
	}
	ctx, cancel := signalContext()
	defer cancel()
	if f.cleanupOnly {
		return cleanupKubelet(ctx, f, log)
	}
	var cfg, policyCfg *rest.Config
	var err error
	switch {
	case f.kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig %s: %w", f.kubeconfig, err)
		}
	case f.server != "" && f.token != "":
		src, err := nodeCredential(ctx, f, log)
		if err != nil {
			return err
		}
		go src.Run(ctx)
		cfg, policyCfg = src.RESTConfig(), src.NetworkPolicyRESTConfig()
	default:
		return fmt.Errorf("no credential: pass --kubeconfig FILE, or --server URL and --token TOKEN")
	}
	if f.images == "" {
		if exe, err := os.Executable(); err == nil {
			f.images = filepath.Join(filepath.Dir(exe), "images")
		}
	}
	// The kubelet's series (prober_probe_total, config reloads) and the wasm host's
	// (wasmkube_plugin_failures_total) are served at the kubelet's /metrics.
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	hooks, err := newHooks(filepath.Join(f.rootDir, "wasm-cache"), log, reg)
	if err != nil {
		return err
	}
	defer hooks.Close()
	go runHookPolicies(ctx, cfg, f.nodeName, hooks, moduleCache(filepath.Join(f.rootDir, "wasm-modules"), f.insecureRegistries), log)
	opts := kubelet.Options{
		RESTConfig: cfg, NetworkPolicyRESTConfig: policyCfg, NodeName: f.nodeName, NodeIP: f.nodeIP, RootDir: f.rootDir,
		ContainerdAddress: f.containerdAddr, ContainerdNamespace: f.containerdNS,
		PodCIDR: f.podCIDR, Bridge: f.bridge, CNIBinDir: f.cniBinDir, ImagesDir: f.images,
		ServerAddr: f.listen, CleanupOnExit: f.cleanupOnExit, IPMasq: f.ipMasq, Logger: log, DisableProfiling: f.noProfiling,
		WarmSandboxes: f.warmSandboxes, ConfigFile: f.configFile, Hooks: hooks, Registerer: reg, OCIRuntime: f.ociRuntime,
		ServiceCIDR: f.serviceCIDR, ClusterDomain: f.clusterDomain, DNSUpstreams: dns.HostUpstreams("/etc/resolv.conf"),
		NetworkBackend: f.networkBackend, VXLANDevice: f.vxlanDevice, VXLANID: f.vxlanID, ClusterCIDR: f.clusterCIDR,
	}
	if opts.ContainerdAddress == "" {
		d, err := kcontainerd.Start(ctx, filepath.Join(f.rootDir, "containerd"))
		if err != nil {
			return fmt.Errorf("start containerd: %w", err)
		}
		defer d.Stop()
		opts.ContainerdAddress, opts.Snapshotter = d.Address(), d.Snapshotter()
	} else {
		opts.Snapshotter = kcontainerd.DetectSnapshotter(os.TempDir())
	}
	k, err := kubelet.New(ctx, opts)
	if err != nil {
		return err
	}
	return k.Run(ctx)
}

// cleanupKubelet is --cleanup-only: the dead kubelet's containerd started again on its
// state (it finds the shims still running and their tasks), then the exit clean-up.
func cleanupKubelet(ctx context.Context, f kubeletFlags, log *slog.Logger) error {
	opts := kubelet.CleanupOptions{NodeName: f.nodeName, RootDir: f.rootDir, ContainerdAddress: f.containerdAddr,
		ContainerdNamespace: f.containerdNS, Bridge: f.bridge, CNIBinDir: f.cniBinDir, Logger: log}
	if opts.ContainerdAddress == "" {
		d, err := kcontainerd.Start(ctx, filepath.Join(f.rootDir, "containerd"))
		if err != nil {
			return fmt.Errorf("start containerd on the dead kubelet's state: %w", err)
		}
		defer d.Stop()
		opts.ContainerdAddress, opts.Snapshotter = d.Address(), d.Snapshotter()
	}
	if err := kubelet.Cleanup(ctx, opts); err != nil {
		return err
	}
	log.Info("clean-up of a dead kubelet done", "node", f.nodeName, "root", f.rootDir)
	return nil
}

// defaultNodeIP is the node's InternalIP when --node-ip is not given: the --listen
// address when it names one (the API server must reach the kubelet at its InternalIP, so
// a kubelet listening on 127.0.0.1 is a local node), else the address of the default
// route's interface (a host joining a cluster), else 127.0.0.1.
func defaultNodeIP(listen string, log *slog.Logger) string {
	if host, _, err := net.SplitHostPort(listen); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil && !ip.IsUnspecified() {
			return ip.String()
		}
	}
	ip, err := overlay.DefaultRouteIP()
	if err != nil {
		log.Info("node IP 127.0.0.1: pods of other hosts cannot reach this node's", "reason", err)
		return "127.0.0.1"
	}
	return ip.String()
}

// readNetworkBackend is the config file's network.backend (WASMKUBE_NETWORK_BACKEND
// overrides it), default overlay.DefaultBackend.
func readNetworkBackend(configFile string) (string, error) {
	v := viper.New()
	v.SetDefault("network.backend", overlay.DefaultBackend)
	if err := v.BindEnv("network.backend", "WASMKUBE_NETWORK_BACKEND"); err != nil {
		return "", err
	}
	if configFile != "" {
		if err := readConfigInto(v, configFile); err != nil {
			return "", err
		}
	}
	b := v.GetString("network.backend")
	if err := overlay.CheckBackend(b); err != nil {
		return "", fmt.Errorf("config %s: network.backend: %w", configFile, err)
	}
	return b, nil
}

// newHooks is the kubelet's wasm host (probe and preStop kinds, compiled code cached in
// cacheDir) and the hook plugins it runs.
func newHooks(cacheDir string, log *slog.Logger, reg prometheus.Registerer) (*nodewasm.Hooks, error) {
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension},
		CacheDir: cacheDir, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return nodewasm.New(host, log).WithMetrics(wasmpolicy.NewMetrics(reg)), nil
}

// nodeCredential is the kubelet's credential for --server: the one saved in the root dir
// when it is still valid for this server and node, else a new one from a join (saved).
// The returned source renews it before it expires.
func nodeCredential(ctx context.Context, f kubeletFlags, log *slog.Logger) (*nodecred.Source, error) {
	if err := os.MkdirAll(f.rootDir, 0o700); err != nil {
		return nil, fmt.Errorf("--root-dir: %w", err)
	}
	path := filepath.Join(f.rootDir, "node-credential.json")
	join := func(ctx context.Context) (nodecred.Credential, error) {
		c, err := nodecred.Join(ctx, f.server, f.token, f.nodeName)
		var se *nodecred.StatusError
		if errors.As(err, &se) && se.Code == http.StatusConflict {
			return c, fmt.Errorf("%w\n(this kubelet has no saved credential in %s; if the node's old kubelet is gone, revoke its credential as docs/security.md says, then start again)", err, path)
		}
		if err != nil {
			return c, err
		}
		return c, nodecred.Save(path, c)
	}
	c, err := nodecred.Load(path)
	if err != nil || !c.Valid(f.server, f.nodeName, time.Now()) {
		if c, err = join(ctx); err != nil {
			return nil, err
		}
	}
	src := nodecred.NewSource(c, path, join, log)
	if c.NetworkPolicyToken == "" {
		// Saved before the NetworkPolicy enforcer had a credential of its own: a renewal
		// brings one.
		if err := src.RenewNow(ctx); err != nil {
			return nil, err
		}
	}
	return src, nil
}

// runHookPolicies loads the WasmPolicies of the kubelet hooks whose nodeSelector matches
// node into hooks (the API tier beside the config file's kubelet: section; modules fetched
// and cached as cache says), reading them with the node's credential, until ctx ends.
func runHookPolicies(ctx context.Context, cfg *rest.Config, node string, hooks *nodewasm.Hooks, cache wasmoci.Options, log *slog.Logger) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Error("kubelet hook plugins: no client for WasmPolicies; only the config file's are loaded", "err", err)
		return
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error("kubelet hook plugins: no client for WasmPolicies; only the config file's are loaded", "err", err)
		return
	}
	// Its reports on the policies (plugins/wasmpolicy/report); its liveness is its Node's
	// Ready condition.
	sink, err := report.New(report.Options{Client: dyn, Component: wasmpolicy.ComponentKubelet, Instance: node, Logger: log})
	if err != nil {
		log.Error("kubelet hook plugins: no WasmPolicy status reports", "err", err)
		return
	}
	go sink.Run(ctx)
	loader, err := wasmpolicy.New(wasmpolicy.Config{
		Component: wasmpolicy.ComponentKubelet, Name: node, Dynamic: dyn, Client: client, Target: hooks,
		Cache:  cache,
		Sink:   wasmpolicy.RecordSwaps(sink, hooks.DecisionRecorder),
		Logger: log,
	})
	if err != nil {
		log.Error("kubelet hook plugins: WasmPolicies not loaded", "err", err)
		return
	}
	loader.Run(ctx)
}
