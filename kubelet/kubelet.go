// Package kubelet is wasmkube's node agent: it registers its Node, watches the pods bound to
// it, runs them through a CRI-shaped runtime (containerd in production, a fake in tests),
// probes them, reports their status, serves their logs, and tears them down on deletion.
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
	"github.com/wasmkube/wasmkube/kubelet/cni"
	"github.com/wasmkube/wasmkube/kubelet/hook"
	"github.com/wasmkube/wasmkube/kubelet/images"
	"github.com/wasmkube/wasmkube/kubelet/localpath"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/kubelet/runtime"
)

// Version is the kubeletVersion the node reports.
const Version = "v1.32.0-wasmkube"

// DefaultWarmSandboxes is the size of the warm sandbox pool `wasmkube kubelet` and
// `wasmkube up` keep (--warm-sandboxes): enough for a burst of 20 pods on one node.
const DefaultWarmSandboxes = 20

// Options configure a Kubelet.
type Options struct {
	RESTConfig *rest.Config // the node's credential
	// NetworkPolicyRESTConfig is the NetworkPolicy enforcer's credential (user
	// system:wasmkube:network-policy-agent:<node>, issued at join beside the node's): it
	// reads every pod, namespace and policy, which the node's may not. Nil: RESTConfig.
	NetworkPolicyRESTConfig *rest.Config
	NodeName                string
	NodeIP                  string // InternalIP; default 127.0.0.1 (the local node)
	// DisableProfiling turns off /debug/pprof/ on the kubelet's server (upstream's
	// enableProfilingHandler=false); served by default to callers allowed get on
	// nodes/proxy of the node (internal/profiling).
	DisableProfiling bool
	RootDir          string // pods, logs, sandboxes, CNI state, serving certificate

	ContainerdAddress   string
	ContainerdNamespace string // default: the node name (one namespace per node)
	Snapshotter         string // default overlayfs
	// PodCIDR overrides the node's pod subnet (one host, or a cluster without node IPAM):
	// the Node is created with it, and the kubelet refuses to run if the Node already
	// has another. Empty: the kubelet waits for its Node's spec.podCIDR (node IPAM).
	PodCIDR string
	Bridge  string // default cni.DefaultBridge
	// IPMasq masquerades pod traffic leaving the cluster CIDR (off: it cannot leave the
	// machine); pod-to-pod traffic between nodes is never masqueraded (podcidr.go).
	IPMasq bool
	// ClusterCIDR is every node's pod subnets together (default
	// overlay.DefaultClusterCIDR): traffic to it is not masqueraded.
	ClusterCIDR string
	// NetworkBackend routes the other nodes' pod subnets: overlay.BackendHostGW (the
	// default) or overlay.BackendNone (kubelet/overlay, docs/multihost.md).
	NetworkBackend string
	// VXLANDevice names the vxlan backend's device (default overlay.DefaultVXLANDevice).
	VXLANDevice string
	// VXLANID is the vxlan backend's VNI, one per cluster (default overlay.DefaultVXLANID).
	VXLANID    int
	CNIBinDir  string // default /usr/lib/cni
	PauseImage string // default images.PauseRef
	ImagesDir  string // OCI archives imported at start when their images are missing
	// OCIRuntime is the OCI runtime new containers are created with: runc (the default),
	// crun, or auto (crun when installed, else runc); runtime.ResolveOCIRuntime, docs/kubelet.md.
	OCIRuntime string

	ServerAddr string // HTTPS listen address; default :10250, 127.0.0.1:0 in tests

	// ServiceCIDR is the API server's service range (default proxy.DefaultServiceCIDR): the
	// node proxy refuses what is addressed to it and has no backend, so it never leaves
	// the machine. ClusterDomain is the DNS domain (default cluster.local); DNSUpstreams
	// (host:port) answer names outside it (none: refused). DisableServiceProxy turns off
	// the proxy and the DNS server (pods then get the host's resolv.conf). docs/proxy.md.
	ServiceCIDR         string
	ClusterDomain       string
	DNSUpstreams        []string
	DisableServiceProxy bool

	// ParallelPodStarts bounds how many pods create their sandbox and first containers at
	// once; default twice the number of CPUs.
	ParallelPodStarts int

	// WarmSandboxes is how many pod sandboxes (network wired, pause running) the node keeps
	// ready ahead of its pods; a pod that takes one only creates its containers. 0: none.
	WarmSandboxes int

	// CleanupOnExit stops and removes every pod of the node when Run returns (wasmkube up
	// does this on Ctrl-C). Off, pods keep running and a restarted kubelet adopts them.
	CleanupOnExit bool

	// Runtime replaces containerd (tests, simulated nodes). Network is then unused.
	Runtime runtime.Runtime
	// Prober, PreStop and PostStart replace the built-in runners (the wasm plugin seam).
	Prober    probe.Prober
	PreStop   hook.PreStopRunner
	PostStart hook.PostStartRunner

	// ConfigFile is the wasmkube config file whose kubelet: section declares the node's
	// wasm hook plugins; it is applied at start and reloaded when it changes. Empty: none.
	ConfigFile string
	// Hooks runs the hook plugins (plugins/nodewasm.Hooks); nil: a config that declares
	// any is refused.
	Hooks HookPlugins
	// Registerer gets the kubelet's metrics (prober_probe_total,
	// wasmkube_kubelet_config_reloads_total); when it is also a prometheus.Gatherer, the
	// kubelet's HTTPS server serves it at /metrics. Nil: the metrics are kept, not served.
	Registerer prometheus.Registerer

	// StatsInterval is how often the containers' cgroups are sampled for /stats/summary
	// (stats.go; default DefaultStatsInterval). The CPU rate is over the last interval.
	StatsInterval time.Duration

	Logger *slog.Logger
}

// Kubelet is a running node agent.
type Kubelet struct {
	opts   Options
	log    *slog.Logger
	client kubernetes.Interface
	// explorer records the hooks' decisions (explorer.go); nil when they do not record.
	explorer *explorer.Recorder
	// policyClient is the NetworkPolicy enforcer's (Options.NetworkPolicyRESTConfig).
	policyClient kubernetes.Interface
	rt           runtime.Runtime
	ctrd         *runtime.Containerd
	net          *cni.Network
	prober       probe.Prober
	preStop      hook.PreStopRunner
	postStart    hook.PostStartRunner
	rec          *recorder
	objects      Objects
	tokens       *tokenManager // renews projected service account tokens
	podStore     cache.Indexer
	listener     net.Listener
	metrics      *kubeletMetrics
	hookCfg      hookConfig
	svc          *services
	stats        *statsCollector
	// podCIDR is the node's pod subnet, known once Run has it (the override, or the
	// Node's spec.podCIDR); read only after that.
	podCIDR string

	nsMu    sync.Mutex
	nsCache map[string]nsEntry

	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	warned   map[string]bool
	wg       sync.WaitGroup
	runtimeV string

	startSlots chan struct{}
	images     map[string]time.Time // image ref -> when last seen present
}

// imageKnown reports whether ref was seen present in the last minute, which spares an
// ImageStatus round trip per container start. Images are rarely removed under a running
// kubelet; a removed one fails container creation and is checked again on the retry.
func (k *Kubelet) imageKnown(ref string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	t, ok := k.images[ref]
	return ok && time.Since(t) < time.Minute
}

func (k *Kubelet) setImageKnown(ref string) {
	k.mu.Lock()
	k.images[ref] = time.Now()
	k.mu.Unlock()
}

func (k *Kubelet) forgetImage(ref string) {
	k.mu.Lock()
	delete(k.images, ref)
	k.mu.Unlock()
}

// New validates opts, connects to the API server and to the runtime, and opens the HTTPS
// listener (so Port is known before Run).
func New(ctx context.Context, opts Options) (*Kubelet, error) {
	if opts.RESTConfig == nil || opts.NodeName == "" || opts.RootDir == "" {
		return nil, errors.New("kubelet: RESTConfig, NodeName and RootDir are required")
	}
	if opts.NodeIP == "" {
		opts.NodeIP = "127.0.0.1"
	}
	if opts.ContainerdNamespace == "" {
		opts.ContainerdNamespace = opts.NodeName
	}
	if opts.PauseImage == "" {
		opts.PauseImage = images.PauseRef
	}
	if opts.PodCIDR != "" {
		p, err := netip.ParsePrefix(opts.PodCIDR)
		if err != nil || !p.Addr().Is4() {
			return nil, fmt.Errorf("kubelet: pod CIDR %q is not an IPv4 CIDR", opts.PodCIDR)
		}
		opts.PodCIDR = p.Masked().String()
	}
	if opts.ServerAddr == "" {
		opts.ServerAddr = ":10250"
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	root, err := filepath.Abs(opts.RootDir)
	if err != nil {
		return nil, err
	}
	opts.RootDir = root
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o755); err != nil {
		return nil, fmt.Errorf("kubelet root dir: %w", err)
	}
	k := &Kubelet{opts: opts, log: opts.Logger.With("component", "kubelet", "node", opts.NodeName),
		workers: map[types.UID]*podWorker{}, warned: map[string]bool{}, images: map[string]time.Time{},
		metrics: newKubeletMetrics(opts.Registerer), nsCache: map[string]nsEntry{}}
	n := opts.ParallelPodStarts
	if n <= 0 {
		n = 2 * goruntime.NumCPU()
	}
	k.startSlots = make(chan struct{}, n)
	cfg := rest.CopyConfig(opts.RESTConfig)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 100, 200
	}
	cfg.UserAgent = "wasmkube-kubelet/" + opts.NodeName
	if k.client, err = kubeclient.NewClientset(cfg); err != nil {
		return nil, fmt.Errorf("kubelet: API client: %w", err)
	}
	k.policyClient = k.client
	if opts.NetworkPolicyRESTConfig != nil {
		pc := rest.CopyConfig(opts.NetworkPolicyRESTConfig)
		pc.UserAgent = "wasmkube-netpol/" + opts.NodeName
		if k.policyClient, err = kubeclient.NewClientset(pc); err != nil {
			return nil, fmt.Errorf("kubelet: NetworkPolicy enforcer's API client: %w", err)
		}
	}
	k.rt = opts.Runtime
	if k.rt == nil {
		net, err := cni.New(cni.Config{Bridge: opts.Bridge, PodCIDR: opts.PodCIDR, BinDir: opts.CNIBinDir, Dir: filepath.Join(root, "cni"),
			MTU: podMTU(opts.NetworkBackend, opts.NodeIP)})
		if err != nil {
			return nil, err
		}
		oci, err := runtime.ResolveOCIRuntime(opts.OCIRuntime, runtime.OCIWrapperDir)
		if err != nil {
			return nil, fmt.Errorf("kubelet: %w", err)
		}
		k.log.Info("OCI runtime", "runtime", oci.Name, "binary", oci.Binary, "note", oci.Note)
		c, err := runtime.NewContainerd(ctx, runtime.ContainerdOptions{Address: opts.ContainerdAddress, Namespace: opts.ContainerdNamespace,
			Snapshotter: opts.Snapshotter, RootDir: filepath.Join(root, "runtime"), Network: net, Logger: k.log, OCIRuntime: oci})
		if err != nil {
			return nil, err
		}
		if k.runtimeV, err = c.Version(ctx); err != nil {
			c.Close()
			return nil, err
		}
		if err := k.importImages(ctx, c); err != nil {
			c.Close()
			return nil, err
		}
		k.rt, k.ctrd, k.net = c, c, net
	} else if k.runtimeV, err = k.rt.Version(ctx); err != nil {
		return nil, err
	}
	k.prober, k.preStop, k.postStart = opts.Prober, opts.PreStop, opts.PostStart
	if k.prober == nil {
		k.prober = probe.NewRunner(k.rt)
	}
	hr := hook.NewRunner(k.rt)
	if k.preStop == nil {
		k.preStop = hr
	}
	if k.postStart == nil {
		k.postStart = hr
	}
	k.rec = newRecorder(k.client, opts.NodeName, k.log)
	k.rec.busy = func() bool { return len(k.startSlots) > 0 }
	if err := k.setupHooks(ctx); err != nil {
		k.Close()
		return nil, err
	}
	k.tokens = newTokenManager(k.client, opts.RootDir, k.log)
	k.objects = apiObjects{c: k.client, tokens: k.tokens}
	if k.listener, err = k.listen(); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

// Runtime is the runtime the kubelet drives.
func (k *Kubelet) Runtime() runtime.Runtime { return k.rt }

// Port is the HTTPS server's port (daemonEndpoints.kubeletEndpoint.Port).
func (k *Kubelet) Port() int { return k.listener.Addr().(*net.TCPAddr).Port }

// Close releases what New opened when Run is never called.
func (k *Kubelet) Close() {
	if k.listener != nil {
		k.listener.Close()
	}
	if k.tokens != nil {
		k.tokens.Close()
	}
	if k.ctrd != nil {
		k.ctrd.Close()
	}
}

// importImages imports every archive in ImagesDir whose images are not all present.
func (k *Kubelet) importImages(ctx context.Context, rt *runtime.Containerd) error {
	if k.opts.ImagesDir == "" {
		return nil
	}
	archives, _ := filepath.Glob(filepath.Join(k.opts.ImagesDir, "*.tar"))
	ctx = namespaces.WithNamespace(ctx, k.opts.ContainerdNamespace)
	for _, a := range archives {
		refs, err := images.ArchiveRefs(a)
		if err != nil {
			return err
		}
		missing := len(refs) == 0
		for _, r := range refs {
			if img, err := rt.ImageStatus(ctx, r); err != nil || img == nil {
				missing = true
			}
		}
		if !missing {
			continue
		}
		names, err := images.ImportFile(ctx, rt.Client(), a, k.snapshotter())
		if err != nil {
			return err
		}
		k.log.Info("imported images", "archive", a, "images", names)
	}
	if _, err := os.Stat(filepath.Join(k.opts.ImagesDir, "pause.tar")); err != nil {
		k.log.Warn("no pause image archive; run `make images`", "dir", k.opts.ImagesDir)
	}
	return nil
}

func (k *Kubelet) snapshotter() string {
	if k.opts.Snapshotter == "" {
		return "overlayfs"
	}
	return k.opts.Snapshotter
}

// Run registers the node, serves HTTPS, and runs pods until ctx ends. With CleanupOnExit
// the node's pods are removed on every way out, an error as well as ctx's end.
func (k *Kubelet) Run(ctx context.Context) error {
	defer k.Close()
	err := k.run(ctx)
	if k.opts.CleanupOnExit {
		k.cleanupAll()
	}
	return err
}

// run is Run until every goroutine it started has ended.
func (k *Kubelet) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go k.rec.run(ctx)
	k.stats = newStatsCollector(k.rt, k.opts.NodeName, k.opts.StatsInterval)
	srvDone := k.serve(ctx)

	if err := k.registerNode(ctx); err != nil {
		<-srvDone
		if ctx.Err() != nil {
			return nil // stopped while registering
		}
		return err
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.heartbeat(ctx) }()
	if err := k.setupPodNetwork(ctx); err != nil {
		stopped := ctx.Err() != nil // stopped while waiting for the pod subnet
		cancel()
		k.wg.Wait()
		<-srvDone
		if stopped {
			return nil
		}
		return err
	}

	factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.opts.NodeName).String()
	}))
	inf := factory.Core().V1().Pods().Informer()
	k.podStore = inf.GetIndexer()
	if err := k.setupServices(inf); err != nil {
		cancel() // the heartbeat and the backend end with it
		k.wg.Wait()
		<-srvDone
		return err
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.svc.run(ctx, k) }()
	// Containers get the service environment at creation: know the Services first.
	if !cache.WaitForCacheSync(ctx.Done(), k.svc.synced) {
		k.wg.Wait()
		<-srvDone
		return nil
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { k.dispatch(ctx, o) },
		UpdateFunc: func(_, o any) { k.dispatch(ctx, o) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			if p, ok := o.(*v1.Pod); ok {
				k.mu.Lock()
				w := k.workers[p.UID]
				k.mu.Unlock()
				if w != nil {
					w.update(nil)
				}
			}
		},
	})
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		factory.Shutdown()
		k.wg.Wait()
		<-srvDone
		return nil // stopped before the first list
	}
	k.log.Info("kubelet running", "port", k.Port(), "runtime", k.runtimeV)
	k.cleanupOrphans(ctx)
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.relist(ctx) }()
	// The local-path provisioner of this node (kubelet/localpath, docs/volumes.md).
	k.wg.Add(1)
	go func() { defer k.wg.Done(); localpath.New(k.client, k.opts.NodeName, k.opts.RootDir, k.log).Run(ctx) }()
	if k.opts.ConfigFile != "" {
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.watchConfig(ctx) }()
	}
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.stats.run(ctx) }()
	if k.ctrd != nil {
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.ctrd.RunWarmPool(ctx, k.opts.WarmSandboxes, k.opts.PauseImage) }()
	}

	<-ctx.Done()
	factory.Shutdown()
	k.wg.Wait()
	<-srvDone
	return nil
}

func (k *Kubelet) dispatch(ctx context.Context, o any) {
	p, ok := o.(*v1.Pod)
	if !ok || p.Spec.NodeName != k.opts.NodeName {
		return
	}
	k.mu.Lock()
	w := k.workers[p.UID]
	if w == nil {
		if ctx.Err() != nil {
			k.mu.Unlock()
			return
		}
		w = newPodWorker(k, p)
		k.workers[p.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run(ctx)
			k.metrics.probes.DeletePartialMatch(map[string]string{"pod": p.Name, "namespace": p.Namespace})
			k.mu.Lock()
			if k.workers[p.UID] == w {
				delete(k.workers, p.UID)
			}
			k.mu.Unlock()
		}()
		k.mu.Unlock()
		return
	}
	k.mu.Unlock()
	w.update(p)
}

func (k *Kubelet) warnOnce(pod *v1.Pod, reason, msg string) {
	key := string(pod.UID) + reason + msg
	k.mu.Lock()
	seen := k.warned[key]
	k.warned[key] = true
	k.mu.Unlock()
	if !seen {
		k.rec.event(pod, v1.EventTypeWarning, reason, "", "%s", msg)
	}
}

// cleanupOrphans removes sandboxes and containers whose pods are gone from the API and have
// no worker: after a crash, this is where their network is released (CNI DEL).
func (k *Kubelet) cleanupOrphans(ctx context.Context) {
	known := func(uid string) bool {
		k.mu.Lock()
		_, ok := k.workers[types.UID(uid)]
		k.mu.Unlock()
		if ok {
			return true
		}
		for _, o := range k.podStore.List() {
			if string(o.(*v1.Pod).UID) == uid {
				return true
			}
		}
		return false
	}
	sbs, err := k.rt.ListSandboxes(ctx, "")
	if err != nil {
		k.log.Warn("list sandboxes for cleanup", "err", err)
		return
	}
	for _, sb := range sbs {
		if !known(sb.Pod.UID) {
			k.log.Info("removing sandbox of a pod that is gone", "pod", sb.Pod.Namespace+"/"+sb.Pod.Name, "sandbox", sb.ID)
			if err := k.rt.RemovePodSandbox(ctx, sb.ID); err != nil {
				k.log.Warn("remove orphaned sandbox", "sandbox", sb.ID, "err", err)
			}
			if err := RemovePodDir(k.opts.RootDir, sb.Pod.UID); err != nil {
				k.log.Warn("remove orphaned pod dir", "pod", sb.Pod.UID, "err", err)
			}
		}
	}
	cs, err := k.rt.ListContainers(ctx, "")
	if err != nil {
		return
	}
	for _, c := range cs {
		if !known(c.Pod.UID) {
			_ = k.rt.StopContainer(ctx, c.ID, 0)
			_ = k.rt.RemoveContainer(ctx, c.ID)
		}
	}
}

// cleanupAll stops and removes every pod of the node (CleanupOnExit).
func (k *Kubelet) cleanupAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sbs, _ := k.rt.ListSandboxes(ctx, "")
	var wg sync.WaitGroup
	for _, sb := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs, _ := k.rt.ListContainers(ctx, sb.Pod.UID)
			for _, c := range cs {
				_ = k.rt.StopContainer(ctx, c.ID, 2*time.Second)
			}
			if err := k.rt.RemovePodSandbox(ctx, sb.ID); err != nil {
				k.log.Warn("remove sandbox on exit", "sandbox", sb.ID, "err", err)
			}
			if err := RemovePodDir(k.opts.RootDir, sb.Pod.UID); err != nil {
				k.log.Warn("remove pod dir on exit", "pod", sb.Pod.UID, "err", err)
			}
		}()
	}
	wg.Wait()
	cs, _ := k.rt.ListContainers(ctx, "")
	for _, c := range cs {
		_ = k.rt.StopContainer(ctx, c.ID, 0)
		_ = k.rt.RemoveContainer(ctx, c.ID)
	}
	if k.ctrd != nil {
		k.ctrd.DrainWarmPool(ctx)
	}
	k.removeMasquerade()
	if k.net != nil {
		if err := k.net.RemoveBridge(); err != nil {
			k.log.Warn("remove bridge on exit", "err", err)
		}
	}
}

// relist notices container state changes (exits, restarts by others) and wakes the pods'
// workers: at once on containerd's exit events, and every second as a safety net.
func (k *Kubelet) relist(ctx context.Context) {
	var changed <-chan string
	if k.ctrd != nil {
		changed = k.ctrd.Changed()
	}
	states := map[string]runtime.ContainerState{}
	owner := map[string]string{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	orphanTick := time.NewTicker(30 * time.Second)
	defer orphanTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-changed:
			if uid, ok := owner[id]; ok {
				k.wake(uid)
				continue
			}
		case <-orphanTick.C:
			k.cleanupOrphans(ctx)
			continue
		case <-tick.C:
		}
		cs, err := k.rt.ListContainers(ctx, "")
		if err != nil {
			continue
		}
		next := map[string]runtime.ContainerState{}
		for _, c := range cs {
			next[c.ID] = c.State
			owner[c.ID] = c.Pod.UID
			if states[c.ID] != c.State {
				k.wake(c.Pod.UID)
			}
		}
		for id := range owner {
			if _, ok := next[id]; !ok {
				delete(owner, id)
			}
		}
		states = next
	}
}

func (k *Kubelet) wake(uid string) {
	k.mu.Lock()
	w := k.workers[types.UID(uid)]
	k.mu.Unlock()
	if w != nil {
		w.wake()
	}
}

// podByName finds a pod of this node in the informer cache.
func (k *Kubelet) podByName(ns, name string) *v1.Pod {
	if k.podStore == nil {
		return nil
	}
	o, ok, err := k.podStore.GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	return o.(*v1.Pod)
}
