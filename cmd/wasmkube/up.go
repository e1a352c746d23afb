package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/webhook"
	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/controller/nodeipam"
	"github.com/wasmkube/wasmkube/core/leaderelect"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/containerd"
	"github.com/wasmkube/wasmkube/kubelet/dns"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/kubelet/overlay"
	kruntime "github.com/wasmkube/wasmkube/kubelet/runtime"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// upOptions are the settings of `wasmkube up`.
type upOptions struct {
	dataDir     string
	configFile  string
	listen      string
	advertise   string
	podCIDR     string
	bridge      string
	nodeName    string
	imagesDir   string
	hollowNodes int
	warm        int
	ociRuntime  string
	noKubelet   bool
	keepPods    bool
	metricsAddr string
	// noProfiling is --profiling=false: no /debug/pprof/ on the API server or the kubelet.
	noProfiling bool
	logLevel    string
	tokenFile   string
	registry    string // serve a wasm module registry there (docs/oci.md)
	// insecureRegistries may be reached over plain HTTP (with --nodes > 1 up adds its own
	// registry's address on the hosts' bridge).
	insecureRegistries []string

	nodes          int    // real nodes: 1 in this process, the others in network namespaces
	hostNetwork    string // the hosts' subnet with --nodes > 1
	hostBridge     string
	networkBackend string
	backendSet     bool
	clusterCIDR    string
}

func init() {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a whole local cluster in one process: etcd, API server, scheduler, controllers, a kubelet",
		Long: `Run a local cluster in the foreground until Ctrl-C:

  embedded etcd and the API server (data under --data-dir),
  the scheduler with the profiles and wasm plugins of --config, and the API server with its wasm
  admission policies (edit the file to swap either live),
  the controller manager,
  one real kubelet on a containerd that up starts and supervises under the data dir, with CNI
  bridge networking (needs root, containerd, runc and the CNI plugins: scripts/deps.sh installs them),
  and --hollow-nodes simulated nodes for scale work.

With --nodes N (N > 1) the cluster has N real hosts on this machine: up creates a bridge
(--host-bridge) on the private --host-network, where the API server and the first node are,
and a network namespace per further node with its own address there, containerd and kubelet
(a child process joined with the join token; its log under <data-dir>/nodes/<node>/).
Node IPAM gives every node a pod subnet of --cluster-cidr and the kubelets route them
(--network-backend). Ctrl-C also removes the namespaces, veths, bridge and routes
(docs/multihost.md).

The API server listens on --listen (loopback by default) and, with the real node, on that
node's pod-bridge gateway (the first address of --pod-cidr) at the same port: the kubernetes
Service sends pods there, so in-cluster clients work without exposing the API on the
machine's other interfaces. A second up on this machine needs its own --bridge, --pod-cidr
and --listen port.

Ctrl-C stops everything and removes the kubelet's pods: no containers, mounts, veths or
network namespaces are left behind. With --keep-pods the pods' containers keep running (their
shims outlive containerd), and the next up on the same data dir adopts them without restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.backendSet = cmd.Flags().Changed("network-backend")
			return runUp(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "_data", "data directory (etcd, certificates, kubeconfig, kubelet and containerd state)")
	f.StringVar(&o.configFile, "config", "", "wasmkube YAML config file (scheduler profiles, wasm plugins, admission policies, controller settings)")
	f.StringVar(&o.listen, "listen", apiserver.DefaultListen, "API server HTTPS listen address")
	f.StringVar(&o.advertise, "advertise-address", "", "address the kubernetes Service sends pods to, where the API server also listens (default: the real node's pod-bridge gateway, the first address of --pod-cidr; without a real node, the --listen address)")
	f.StringVar(&o.podCIDR, "pod-cidr", "", "the first real node's pod subnet (IPv4), overriding node IPAM (default with one node: the cluster CIDR's first node subnet, 10.42.0.0/24; with --nodes > 1: from node IPAM)")
	f.StringVar(&o.bridge, "bridge", cni.DefaultBridge, "the real node's Linux bridge for pods (a second cluster on this machine needs its own, and its own --pod-cidr)")
	f.StringVar(&o.nodeName, "node-name", "", "name of the real node (default: the host name)")
	f.StringVar(&o.imagesDir, "images-dir", "", "OCI archives the kubelet imports at start (default: images/ beside the binary)")
	f.IntVar(&o.hollowNodes, "hollow-nodes", 0, "number of simulated nodes to add")
	f.IntVar(&o.nodes, "nodes", 1, "real nodes: the first in this process, each other one a host of its own (a network namespace on --host-bridge, its own containerd and kubelet, joined with the join token)")
	f.StringVar(&o.hostNetwork, "host-network", DefaultHostNetwork, "with --nodes > 1: the private subnet of the hosts' bridge (the API server and the first node at its first address, host i at the i-th)")
	f.StringVar(&o.hostBridge, "host-bridge", "wkhost0", "with --nodes > 1: the Linux bridge up creates for its hosts; the hosts' network namespaces are <bridge>-2, <bridge>-3, ...")
	f.StringVar(&o.networkBackend, "network-backend", overlay.DefaultBackend, "how pods reach other nodes' pods: vxlan, host-gw or none; overrides the config's network.backend")
	f.StringVar(&o.clusterCIDR, "cluster-cidr", "", "overrides controller.clusterCIDR: node IPAM's range for the nodes' pod subnets (default 10.42.0.0/16)")
	f.IntVar(&o.warm, "warm-sandboxes", kubelet.DefaultWarmSandboxes, "pod sandboxes (network wired, pause running) the real kubelet keeps ready for the next pods; 0 turns the pool off")
	f.StringVar(&o.ociRuntime, "oci-runtime", kruntime.OCIRuntimeRunc, "OCI runtime the real kubelet creates containers with: runc, crun, or auto (crun when installed, else runc)")
	f.BoolVar(&o.noKubelet, "no-kubelet", false, "run without the real kubelet (hollow nodes only)")
	f.BoolVar(&o.keepPods, "keep-pods", false, "on Ctrl-C leave the real node's containers running (their shims outlive containerd); the next up on the same data dir adopts them")
	f.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&o.metricsAddr, "metrics-addr", defaultSchedulerMetricsAddr, "where the scheduler serves /metrics (empty: off); the API server's /metrics has the rest")
	f.Var(negatedBool{&o.noProfiling}, "profiling", "serve /debug/pprof/ on the API server (the whole process) and the kubelet, to callers allowed get on it (as upstream's --profiling)")
	f.Lookup("profiling").NoOptDefVal = "true"
	f.Lookup("profiling").DefValue = "true"
	f.StringVar(&o.tokenFile, "token-auth-file", "", "CSV file of static user tokens (token,user,uid[,\"group1,group2\"]), as kube-apiserver's --token-auth-file (default: the config file's server.tokenAuthFile, else none)")
	f.StringVar(&o.registry, "registry", "", "also serve an OCI registry for wasm modules on this address (e.g. 127.0.0.1:5000; blobs under <data-dir>/registry; docs/oci.md)")
	f.StringSliceVar(&o.insecureRegistries, "insecure-registry", nil, "a registry (host:port) that may be reached over plain HTTP for WasmPolicy modules, by every component (repeatable; loopback registries always may)")
	rootCmd.AddCommand(cmd)
}

func runUp(o upOptions) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: must be debug, info, warn or error", o.logLevel)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	dataDir, err := filepath.Abs(o.dataDir)
	if err != nil {
		return err
	}
	cs, err := readControllerSettings(o.configFile)
	if err != nil {
		return err
	}
	if o.clusterCIDR != "" {
		cs.clusterCIDR = o.clusterCIDR
		if err := cs.checkIPAM("--cluster-cidr"); err != nil {
			return err
		}
	}
	o.clusterCIDR = cs.clusterCIDR // the kubelets' too
	if o.nodes < 1 {
		return fmt.Errorf("--nodes %d: at least 1 (use --no-kubelet for none)", o.nodes)
	}
	if !o.backendSet {
		if o.networkBackend, err = readNetworkBackend(o.configFile); err != nil {
			return err
		}
	}
	if err := overlay.CheckBackend(o.networkBackend); err != nil {
		return fmt.Errorf("--network-backend: %w", err)
	}
	if o.podCIDR == "" && o.nodes == 1 {
		// The single node's subnet is known before it registers, because the API server
		// listens at its bridge's gateway: node IPAM's first, which the node then claims.
		if o.podCIDR, err = firstNodeSubnet(cs); err != nil {
			return err
		}
	}
	tokenFile, err := upTokenAuthFile(o)
	if err != nil {
		return err
	}

	// The real node runs unless told not to or unable to; pods on it reach the API server
	// at the node's pod-bridge gateway, where the API server then also listens: the API
	// stays off the machine's other interfaces (docs/workloads.md).
	var missing []string
	if !o.noKubelet {
		missing = kubeletPrerequisites()
	}
	realNode := !o.noKubelet && len(missing) == 0
	var hosts *hostNetwork
	var hostAddrs []netip.Addr
	if realNode && o.nodes > 1 {
		subnet, addrs, err := hostNetworkPlan(o.hostNetwork, o.nodes)
		if err != nil {
			return err
		}
		if hosts, err = createHostNetwork(o.hostBridge, subnet, addrs); err != nil {
			return err
		}
		hostAddrs = addrs
		defer func() {
			if err := hosts.remove(); err != nil {
				log.Error("remove the hosts' network", "err", err)
			}
		}()
		if o.advertise == "" {
			// The API server is where every host reaches it: the hosts' bridge.
			o.advertise = addrs[0].String()
		}
	}
	advertise, err := upAdvertiseAddress(o, realNode)
	if err != nil {
		return err
	}

	ctx, stop := signalContext()
	defer stop()
	if o.registry != "" {
		listen := []string{o.registry}
		if hostAddrs != nil {
			// The other hosts are network namespaces whose loopback is their own: they
			// reach the registry where they reach the API server, on the hosts' bridge,
			// over plain HTTP (listed as insecure for every component; docs/oci.md).
			onHosts, err := registryOnHosts(o.registry, hostAddrs[0])
			if err != nil {
				return err
			}
			if onHosts != "" {
				listen = append(listen, onHosts)
				o.insecureRegistries = append(o.insecureRegistries, onHosts)
				log.Info("the registry is reached from every host at " + onHosts + ": name it so in WasmPolicies the kubelets load")
			}
		}
		if _, err := startRegistry(ctx, filepath.Join(dataDir, "registry"), log, listen...); err != nil {
			return err
		}
	}
	cs.insecureRegistries = o.insecureRegistries
	// The API server outlives the other components, so that the kubelet can finish
	// deleting its pods through it after Ctrl-C.
	apiCtx, stopAPI := context.WithCancel(context.Background())
	defer stopAPI()
	adm, admPlugins, err := newAdmission(apiCtx, dataDir, o.configFile, log)
	if err != nil {
		return err
	}
	// up's host runs a node proxy: a webhook's clientConfig.service is reached at the
	// Service's ClusterIP through it, as kube-apiserver does by default (docs/admission.md).
	for _, p := range admPlugins {
		if w, ok := p.(*webhook.Webhooks); ok {
			if err := w.SetServiceRouting(webhook.RouteClusterIP); err != nil {
				return err
			}
		}
	}
	srv, err := startAPIServer(apiCtx, apiserver.Options{
		DataDir: dataDir, Listen: o.listen, AdvertiseAddress: advertise, DefaultTolerationSeconds: cs.tolerationSeconds, Logger: log,
		Admission: admPlugins, TokenAuthFile: tokenFile, DisableProfiling: o.noProfiling,
	})
	if err != nil {
		return err
	}
	defer func() { stopAPI(); _ = srv.Wait() }()
	runAdmission(apiCtx, adm, srv, moduleCache(filepath.Join(dataDir, "wasm-modules"), o.insecureRegistries), log)

	if err := startControlPlane(ctx, srv, dataDir, o.configFile, o.metricsAddr, cs, false, log); err != nil {
		return err
	}

	kubeletDone := make(chan error, 1)
	var daemon *containerd.Daemon
	var extra *hostKubelets
	if o.noKubelet {
		kubeletDone <- nil
	} else if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "wasmkube up: no real node, because %s.\n  Run `make run` (it installs containerd, runc and the CNI plugins as root), or use --hollow-nodes N.\n",
			joinWords(missing))
		kubeletDone <- nil
	} else {
		nodeIP := ""
		if len(hostAddrs) > 0 {
			nodeIP = hostAddrs[0].String()
		}
		daemon, err = startKubelet(ctx, srv, dataDir, o, nodeIP, log, kubeletDone)
		if err != nil {
			return err
		}
		if hosts != nil {
			extra, err = startHostKubelets(srv, dataDir, o, hosts, hostAddrs, log)
			if err != nil {
				log.Error("start the other hosts' kubelets", "err", err)
			}
		}
	}

	if o.hollowNodes > 0 {
		if realNode {
			// Hollow nodes after the real one has registered, so that node IPAM does not
			// give a hollow node the subnet the real node claims.
			waitForNode(ctx, srv, upNodeName(o), log)
		}
		go func() {
			if err := hollow.Run(ctx, srv.AdminRESTConfig(), hollow.Options{Count: o.hollowNodes, Logger: log}); err != nil && ctx.Err() == nil {
				log.Error("hollow nodes stopped", "err", err)
			}
		}()
	}

	fmt.Fprintf(os.Stderr, "\nwasmkube is up: API server at %s\n  export KUBECONFIG=%s\n  kubectl get nodes\n\n",
		srv.URL(), srv.AdminKubeconfigPath())

	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "wasmkube up: stopping")
	select {
	case err := <-kubeletDone:
		if err != nil {
			log.Error("kubelet", "err", err)
		}
	case <-time.After(2 * time.Minute):
		log.Error("kubelet did not finish cleaning up within 2m")
	}
	if extra != nil {
		extra.stop(2*time.Minute, log)
	}
	if daemon != nil {
		if err := daemon.Stop(); err != nil {
			log.Error("stop containerd", "err", err)
		}
	}
	return nil
}

// upAdvertiseAddress is --advertise-address, else with a real node its pod-bridge gateway
// (which pods reach, unlike the default loopback listen address), else "" (the listen
// address).
func upAdvertiseAddress(o upOptions, realNode bool) (string, error) {
	if o.advertise != "" {
		if err := apiserver.CheckAdvertiseAddress(o.advertise); err != nil {
			return "", fmt.Errorf("--advertise-address: %w", err)
		}
		return o.advertise, nil
	}
	if !realNode {
		return "", nil
	}
	gw, err := kubelet.GatewayIP(o.podCIDR)
	if err != nil {
		return "", fmt.Errorf("--pod-cidr: %w", err)
	}
	return gw, nil
}

// upTokenAuthFile is --token-auth-file, else WASMKUBE_TOKEN_AUTH_FILE, else the config
// file's server.tokenAuthFile (the one server.* key up reads: its other settings are
// flags of its own), checked as `wasmkube server` checks it.
func upTokenAuthFile(o upOptions) (string, error) {
	v := viper.New()
	if err := v.BindEnv("server.tokenAuthFile", "WASMKUBE_TOKEN_AUTH_FILE"); err != nil {
		return "", err
	}
	if o.configFile != "" {
		if err := readConfigInto(v, o.configFile); err != nil {
			return "", err
		}
	}
	if o.tokenFile != "" {
		v.Set("server.tokenAuthFile", o.tokenFile)
	}
	return checkTokenAuthFile(v.GetString("server.tokenAuthFile"))
}

// controllerSettings are the config file's controller.* keys.
type controllerSettings struct {
	nodeMonitorGracePeriod time.Duration
	tolerationSeconds      int64
	clusterCIDR            string // node IPAM's range
	nodeCIDRMaskSize       int
	// insecureRegistries (host:port) may be reached over plain HTTP by the controller that
	// resolves WasmPolicy tags and by every component that fetches their modules.
	insecureRegistries []string
}

func readControllerSettings(configFile string) (controllerSettings, error) {
	v := viper.New()
	v.SetDefault("controller.nodeMonitorGracePeriod", "40s")
	v.SetDefault("controller.defaultTolerationSeconds", 300)
	v.SetDefault("controller.clusterCIDR", nodeipam.DefaultClusterCIDR)
	v.SetDefault("controller.nodeCIDRMaskSize", nodeipam.DefaultNodeMaskSize)
	if configFile != "" {
		if err := readConfigInto(v, configFile); err != nil {
			return controllerSettings{}, err
		}
	}
	g, err := time.ParseDuration(v.GetString("controller.nodeMonitorGracePeriod"))
	if err != nil || g <= 0 {
		return controllerSettings{}, fmt.Errorf("config %s: controller.nodeMonitorGracePeriod: %q is not a positive duration (for example 40s)",
			configFile, v.GetString("controller.nodeMonitorGracePeriod"))
	}
	tol := v.GetInt64("controller.defaultTolerationSeconds")
	if tol < 0 {
		return controllerSettings{}, fmt.Errorf("config %s: controller.defaultTolerationSeconds: %d must not be negative", configFile, tol)
	}
	cs := controllerSettings{nodeMonitorGracePeriod: g, tolerationSeconds: tol,
		clusterCIDR: v.GetString("controller.clusterCIDR"), nodeCIDRMaskSize: v.GetInt("controller.nodeCIDRMaskSize")}
	if err := cs.checkIPAM("config " + configFile + ": controller.clusterCIDR/nodeCIDRMaskSize"); err != nil {
		return controllerSettings{}, err
	}
	return cs, nil
}

// checkIPAM refuses a cluster CIDR and node mask node IPAM cannot cut; what names
// where they came from.
func (cs controllerSettings) checkIPAM(what string) error {
	if _, err := nodeipam.NewAllocator(cs.clusterCIDR, cs.nodeCIDRMaskSize); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// defaultSchedulerMetricsAddr is where the in-process scheduler serves /metrics, as a
// standalone `wasmkube scheduler` does.
const defaultSchedulerMetricsAddr = "127.0.0.1:10259"

// startControlPlane runs the scheduler (with its wasm plugins) and the controllers in
// process, as clients of srv; they stop when ctx ends.
func startControlPlane(ctx context.Context, srv *apiserver.Server, dataDir, configFile, metricsAddr string, cs controllerSettings, leaderElect bool, log *slog.Logger) error {
	// The host's series (wasmkube_plugin_failures_total) are on the default registry, which
	// the API server's /metrics serves; the scheduler's endpoint serves them too.
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension},
		CacheDir: filepath.Join(dataDir, "wasm-cache"), Logger: log, Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		return err
	}
	// Each component acts as its own user (upstream's system:kube-scheduler and
	// system:kube-controller-manager), limited by the bootstrap RBAC roles of those names,
	// not as the admin (docs/security.md).
	schedCfg, err := srv.ComponentRESTConfig(apiserver.SchedulerUser)
	if err != nil {
		return err
	}
	cmCfg, err := srv.ComponentRESTConfig(apiserver.ControllerManagerUser)
	if err != nil {
		return err
	}
	sched, err := scheduler.New(ctx, scheduler.Options{
		RESTConfig: schedCfg, ConfigFile: configFile,
		WasmLoader: schedwasm.NewLoader(host).Load, LeaderElect: leaderElect, Logger: log,
	})
	if err != nil {
		return err
	}
	// The WasmPolicies of the scheduler hooks, from the module cache the API server uses.
	go runSchedulerPolicies(ctx, schedCfg, sched, moduleCache(filepath.Join(dataDir, "wasm-modules"), cs.insecureRegistries), prometheus.DefaultRegisterer, log)
	// The scheduler's metrics (attempts, plugin durations, config reloads) are served where
	// a standalone `wasmkube scheduler` serves them; the API server's /metrics has the rest.
	if metricsAddr != "" {
		if err := serveMetrics(ctx, metricsAddr, gatherersHandler(sched.MetricsGatherer(), hostFailuresOnly(host)), schedulerHealth(sched), log); err != nil {
			log.Warn("scheduler metrics not served (choose another --metrics-addr)", "err", err)
		}
	}
	// Each component campaigns again after losing its Lease (core/leaderelect); /readyz
	// is not ok while one of them starts, stops a term or has stopped for good.
	cmStatus := leaderelect.NewStatus()
	srv.AddReadyzCheck("scheduler", sched.Check)
	srv.AddReadyzCheck("controller-manager", cmStatus.Check)
	go func() {
		if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
			log.Error("scheduler stopped", "err", err)
		}
	}()
	tol := cs.tolerationSeconds
	go func() {
		err := controller.Run(ctx, controller.Options{
			RESTConfig: cmCfg, NodeMonitorGracePeriod: cs.nodeMonitorGracePeriod,
			DefaultTolerationSeconds: &tol, LeaderElect: leaderElect, Logger: log, Status: cmStatus,
			ClusterCIDR: cs.clusterCIDR, NodeCIDRMaskSize: cs.nodeCIDRMaskSize,
			InsecureRegistries: cs.insecureRegistries,
		})
		if err != nil && ctx.Err() == nil {
			log.Error("controller manager stopped", "err", err)
		}
	}()
	return nil
}

// kubeletPrerequisites says what the real node needs and is missing.
func kubeletPrerequisites() []string {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "it needs root")
	}
	for _, bin := range []string{"containerd", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin+" is not installed")
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		missing = append(missing, "the CNI plugins (/usr/lib/cni) are not installed")
	}
	return missing
}

func startKubelet(ctx context.Context, srv *apiserver.Server, dataDir string, o upOptions, nodeIP string, log *slog.Logger, done chan<- error) (*containerd.Daemon, error) {
	name := upNodeName(o)
	images := o.imagesDir
	if images == "" {
		exe, err := os.Executable()
		if err == nil {
			images = filepath.Join(filepath.Dir(exe), "images")
		}
	}
	daemon, err := containerd.Start(ctx, filepath.Join(dataDir, "containerd"))
	if err != nil {
		return nil, fmt.Errorf("start containerd: %w", err)
	}
	nodeCfg, err := srv.NodeRESTConfig(name)
	if err != nil {
		_ = daemon.Stop()
		return nil, err
	}
	policyCfg, err := srv.NetworkPolicyRESTConfig(name)
	if err != nil {
		_ = daemon.Stop()
		return nil, err
	}
	// The kubelet's wasm hook plugins (the config's kubelet: section); its series are on
	// the default registry, which the API server's /metrics serves.
	hooks, err := newHooks(filepath.Join(dataDir, "kubelet", "wasm-cache"), log, prometheus.DefaultRegisterer)
	if err != nil {
		_ = daemon.Stop()
		return nil, err
	}
	go runHookPolicies(ctx, nodeCfg, name, hooks, moduleCache(filepath.Join(dataDir, "wasm-modules"), o.insecureRegistries), log)
	k, err := kubelet.New(ctx, kubelet.Options{
		RESTConfig: nodeCfg, NetworkPolicyRESTConfig: policyCfg, NodeName: name, RootDir: filepath.Join(dataDir, "kubelet"), DisableProfiling: o.noProfiling,
		ContainerdAddress: daemon.Address(), Snapshotter: daemon.Snapshotter(),
		PodCIDR: o.podCIDR, Bridge: o.bridge, NodeIP: nodeIP, NetworkBackend: o.networkBackend,
		// The first node shares this machine's namespace: its device is named after
		// up's host bridge, so that two ups on one machine do not share one.
		VXLANDevice: o.hostBridge + ".1", VXLANID: upVXLANID(o.hostBridge), ClusterCIDR: o.clusterCIDR,
		ImagesDir: images, ServerAddr: kubeletAddr(nodeIP), CleanupOnExit: !o.keepPods, Logger: log,
		WarmSandboxes: o.warm, ConfigFile: o.configFile, Hooks: hooks, Registerer: prometheus.DefaultRegisterer, OCIRuntime: o.ociRuntime,
		// Pods resolve cluster names at the node's DNS server, other names through the host's.
		DNSUpstreams: dns.HostUpstreams("/etc/resolv.conf"),
	})
	if err != nil {
		_ = daemon.Stop()
		return nil, err
	}
	go func() { done <- k.Run(ctx) }()
	return daemon, nil
}

// kubeletAddr is the kubelet's usual port when it is free, else any free port: the node
// publishes its port in status.daemonEndpoints, which is all the API server needs to reach
// it, so a second cluster on the same machine still gets a real node.
func kubeletAddr(ip string) string {
	if ip == "" {
		ip = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "10250"))
	if err != nil {
		return net.JoinHostPort(ip, "0")
	}
	_ = ln.Close()
	return net.JoinHostPort(ip, "10250")
}

func joinWords(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	out := ""
	for i, s := range items {
		switch {
		case i == 0:
			out = s
		case i == len(items)-1:
			out += " and " + s
		default:
			out += ", " + s
		}
	}
	return out
}
