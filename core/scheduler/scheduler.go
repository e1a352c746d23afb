// Package scheduler is wasmkube's scheduler: it watches pods without a node and nodes
// through client-go informers (it never touches etcd), runs each pending pod through
// the profile named by spec.schedulerName (core/scheduler/runtime), assumes the
// decision in its cache and binds asynchronously through pods/binding. It records
// events, the PodScheduled condition and an explanation annotation, serves Prometheus
// metrics, elects a leader through a Lease, and reloads its profiles when the config
// file changes.
package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/core/leaderelect"
	schedcache "github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
)

// ExplainAnnotation holds the last cycle's explanation (JSON of runtime.Explanation): on
// a bound pod (copied from its Binding), on the FailedScheduling Event of an
// unschedulable one. `wasmkube explain pod` prints it (PodExplanation).
const ExplainAnnotation = "scheduler.wasmkube.io/explain"

// WasmLoader compiles, checks and smoke-runs a wasm module declared in the config file
// and returns the factory that makes it a plugin. baseDir is the config file's folder.
type WasmLoader func(ctx context.Context, spec config.WasmPlugin, baseDir string) (framework.PluginFactory, error)

// Options configure a Scheduler.
type Options struct {
	// Kubeconfig is a kubeconfig file; RESTConfig, when set, is used instead.
	Kubeconfig string
	RESTConfig *rest.Config
	// ConfigFile is the wasmkube config file whose `scheduler:` section holds the
	// profiles; it is watched and reloaded on change. Empty: Config, else defaults.
	ConfigFile string
	// Config is the config file's content when there is no file (in-process use).
	Config []byte
	// WasmLoader turns wasm modules into plugins; nil rejects configs with wasmPlugins.
	WasmLoader WasmLoader
	// LeaderElect makes the scheduler take the Lease kube-system/wasmkube-scheduler
	// before scheduling, so that only one of several schedulers acts.
	LeaderElect bool
	// LeaseName and LeaseNamespace override the Lease (default wasmkube-scheduler in
	// kube-system); Identity defaults to hostname plus a random suffix.
	LeaseName, LeaseNamespace, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod default to 15 s, 10 s and 2 s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Queue tunes back-off (tests).
	Queue queue.Options
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Scheduler schedules pods. Create with New, start with Run.
type Scheduler struct {
	opts     Options
	log      *slog.Logger
	client   kubernetes.Interface
	factory  informers.SharedInformerFactory
	cache    *schedcache.Cache
	snapshot *schedcache.Snapshot
	queue    *queue.Queue
	metrics  *metrics
	profiles atomic.Pointer[profileSet]
	baseDir  string

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	// handlersSynced report when the informers' initial lists went through the event
	// handlers (into the cache and queue), not only into the informers' stores.
	handlersSynced []cache.InformerSynced

	// apiStaged are API-tier plugins loaded out of force (StageAPIPlugins), under reloadMu.
	apiStaged map[string]apiEntry

	reloadMu sync.Mutex
	leading  atomic.Bool
	status   *leaderelect.Status
	bindWG   sync.WaitGroup
	ctx      context.Context

	// explorer records each attempt and swap for the decision explorer (explorer.go);
	// nil when records are off; explorerPusher sends them to the API server (made with
	// the ring, so that it misses none), explorerPush counts what it did.
	explorer       *explorer.Recorder
	explorerPusher *explorer.Pusher
	explorerPush   explorer.PushStats
}

// New connects to the API server and loads the profiles; a bad config or a wasm
// module that fails to load is an error here (later reloads keep the last good one).
func New(ctx context.Context, opts Options) (*Scheduler, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := opts.RESTConfig
	if cfg == nil {
		if opts.Kubeconfig == "" {
			return nil, errors.New("scheduler: a kubeconfig (--kubeconfig) or a REST config is required")
		}
		c, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("scheduler: kubeconfig %s: %w", opts.Kubeconfig, err)
		}
		cfg = c
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		// The scheduler binds one pod per request; client-go's default of 5 QPS would
		// cap it at 5 pods/s.
		cfg.QPS, cfg.Burst = 5000, 10000
	}
	cfg.UserAgent = "wasmkube-scheduler"
	ownConnection(cfg)
	client, err := kubeclient.NewClientset(cfg)
	if err != nil {
		return nil, fmt.Errorf("scheduler: client: %w", err)
	}
	if opts.LeaseName == "" {
		opts.LeaseName = "wasmkube-scheduler"
	}
	if opts.LeaseNamespace == "" {
		opts.LeaseNamespace = "kube-system"
	}
	if opts.Identity == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		opts.Identity = host + "_" + hex.EncodeToString(b)
	}
	var s *Scheduler
	qopts := opts.Queue
	if qopts.GroupKey == nil {
		qopts.GroupKey = func(p *v1.Pod) (string, time.Time) { return s.groupKey(p) }
	}
	s = &Scheduler{
		opts:     opts,
		log:      opts.Logger.With("component", "scheduler"),
		client:   client,
		cache:    schedcache.New(),
		snapshot: schedcache.NewSnapshot(),
		queue:    queue.New(qopts),
		status:   leaderelect.NewStatus(),
	}
	s.metrics = newMetrics(s.queue)
	s.broadcaster = record.NewBroadcaster(record.WithContext(ctx))
	s.recorder = s.broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: config.DefaultSchedulerName})

	data := opts.Config
	if opts.ConfigFile != "" {
		abs, err := filepath.Abs(opts.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("scheduler: config file %s: %w", opts.ConfigFile, err)
		}
		s.opts.ConfigFile = abs
		s.baseDir = filepath.Dir(abs)
		data, err = os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("scheduler: read config file: %w", err)
		}
	} else if wd, err := os.Getwd(); err == nil {
		s.baseDir = wd
	}
	s.factory = informers.NewSharedInformerFactory(client, 0)
	ps, err := s.build(ctx, configwatch.Static(data), nil)
	if err != nil {
		return nil, err
	}
	s.profiles.Store(ps)
	s.initExplorer(ps.cfg)
	s.addHandlers()
	return s, nil
}

// ownConnection gives cfg its own TCP connection. client-go shares one HTTP/2
// connection between all clients of a process with the same TLS settings; in process
// (wasmkube up, bench) the scheduler's binds would then queue behind other components'
// watch streams on that one connection.
func ownConnection(cfg *rest.Config) {
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
		cfg.Dial = d.DialContext
	}
}

// MetricsHandler serves the scheduler's Prometheus metrics.
func (s *Scheduler) MetricsHandler() http.Handler { return s.metrics.handler() }

// IsLeader reports whether this scheduler is scheduling (holds the lease, or runs
// without leader election).
func (s *Scheduler) IsLeader() bool { return s.leading.Load() }

// Status is the scheduler's phase: starting, standby, leading, stopping (a term that
// ended), stopped (Run returned).
func (s *Scheduler) Status() *leaderelect.Status { return s.status }

// Check is the scheduler's health check (for /readyz or /healthz): nil while it stands
// by for the Lease or schedules, an error while it starts, stops a term, or after Run
// returned.
func (s *Scheduler) Check() error { return s.status.Check() }

// WasmPlugins names the wasm plugins of the config in force, in config order.
func (s *Scheduler) WasmPlugins() []string {
	var out []string
	for _, w := range s.profiles.Load().cfg.WasmPlugins {
		out = append(out, w.Name)
	}
	return out
}

// Profiles lists the scheduler names of the profiles in force.
func (s *Scheduler) Profiles() []string {
	ps := s.profiles.Load()
	out := make([]string, 0, len(ps.cfg.Profiles))
	for _, p := range ps.cfg.Profiles {
		out = append(out, p.SchedulerName)
	}
	return out
}

// Run starts the informers, waits for them to sync, then schedules until ctx ends.
// With LeaderElect it schedules only while it holds the Lease; when it loses the Lease
// it stops scheduling and campaigns again (see runLeaderElection). It returns nil when
// ctx ends, or an error if the informers could not start.
// runContext is Run's context, or Background before Run: what reloads and the API tier's
// loads run under.
func (s *Scheduler) runContext() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

func (s *Scheduler) Run(ctx context.Context) (err error) {
	s.ctx = ctx
	defer func() { s.status.Set(leaderelect.Stopped, err) }()
	s.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: s.client.CoreV1().Events("")})
	defer s.broadcaster.Shutdown()
	s.factory.Start(ctx.Done())
	for typ, ok := range s.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("scheduler: informer for %v did not sync", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), s.handlersSynced...) {
		return nil
	}
	go s.queue.Run(ctx.Done())
	go s.pushRecords(ctx)
	if s.opts.ConfigFile != "" {
		go s.watchConfig(ctx)
	}
	// Last: the plugins of the profiles in force, once the binding cycles are done.
	defer func() { s.profiles.Load().retire() }()
	defer s.bindWG.Wait()
	defer s.queue.Close()
	if !s.opts.LeaderElect {
		s.status.Set(leaderelect.Leading, nil)
		s.lead(ctx)
		return nil
	}
	return s.runLeaderElection(ctx)
}

// loop schedules pods until ctx ends (the end of a term, or of Run) or the queue closes.
// The queue stays open when ctx ends: pods wait in it for the next term.
func (s *Scheduler) loop(ctx context.Context) {
	s.log.Info("scheduling", "profiles", s.Profiles())
	for ctx.Err() == nil {
		qp := s.queue.PopContext(ctx)
		if qp == nil {
			return
		}
		s.scheduleOne(ctx, qp)
	}
}

func (s *Scheduler) responsible(pod *v1.Pod) bool {
	name := pod.Spec.SchedulerName
	if name == "" {
		name = config.DefaultSchedulerName
	}
	_, ok := s.profiles.Load().frameworks[name]
	return ok
}

func (s *Scheduler) addHandlers() {
	podInf := s.factory.Core().V1().Pods().Informer()
	podReg, _ := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPodAdd(obj.(*v1.Pod)) },
		UpdateFunc: func(o, n any) { s.onPodUpdate(o.(*v1.Pod), n.(*v1.Pod)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*v1.Pod); ok {
				s.onPodDelete(p)
			}
		},
	})
	nodeInf := s.factory.Core().V1().Nodes().Informer()
	nodeReg, _ := nodeInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.cache.AddNode(obj.(*v1.Node))
			s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}, nil, obj, nil)
		},
		UpdateFunc: func(o, n any) {
			old, node := o.(*v1.Node), n.(*v1.Node)
			s.cache.UpdateNode(node)
			if nodeSchedulingChanged(old, node) {
				s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Update}, old, node, nil)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*v1.Node); ok {
				s.cache.RemoveNode(n.Name)
			}
		},
	})
	s.handlersSynced = []cache.InformerSynced{podReg.HasSynced, nodeReg.HasSynced, s.addGroupHandlers()}
}

func terminated(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (s *Scheduler) onPodAdd(p *v1.Pod) {
	switch {
	case p.Spec.NodeName != "":
		if terminated(p) {
			return
		}
		if err := s.cache.AddPod(p); err != nil {
			s.log.Error("cache: add pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, Action: framework.Add}, nil, p, affinityRelated)
	case s.pending(p):
		s.queue.Add(p)
		s.memberAdded(p)
	}
}

// affinityRelated selects unschedulable pods that a new running pod may help (pod
// affinity, topology spread), as upstream's AssignedPodAdd event.
func affinityRelated(qp *queue.QueuedPodInfo) bool {
	_, a := qp.UnschedulablePlugins["InterPodAffinity"]
	_, b := qp.UnschedulablePlugins["PodTopologySpread"]
	return a || b
}

func (s *Scheduler) pending(p *v1.Pod) bool {
	return p.Spec.NodeName == "" && p.DeletionTimestamp == nil && !terminated(p) &&
		len(p.Spec.SchedulingGates) == 0 && s.responsible(p)
}

func (s *Scheduler) onPodUpdate(old, p *v1.Pod) {
	if p.Spec.NodeName != "" {
		if old.Spec.NodeName == "" {
			s.queue.Delete(p)
		}
		if terminated(p) {
			if err := s.cache.RemovePod(p); err != nil {
				s.log.Error("cache: remove pod", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
			s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, Action: framework.Delete}, old, p, nil)
			return
		}
		if err := s.cache.UpdatePod(p); err != nil {
			s.log.Error("cache: update pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		return
	}
	if s.cache.IsAssumedPod(p) {
		return
	}
	if s.pending(p) {
		s.queue.Update(old, p)
	} else {
		s.queue.Delete(p)
	}
}

func (s *Scheduler) onPodDelete(p *v1.Pod) {
	s.queue.DeleteNominated(p)
	if p.Spec.NodeName != "" {
		if err := s.cache.RemovePod(p); err != nil {
			s.log.Error("cache: remove pod", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		s.moveOnEvent(framework.ClusterEvent{Resource: framework.ResourcePod, Action: framework.Delete}, p, nil, nil)
		return
	}
	s.queue.Delete(p)
}

// nodeSchedulingChanged is true when a node update can change a scheduling verdict
// (not for heartbeats).
func nodeSchedulingChanged(a, b *v1.Node) bool {
	if a.Spec.Unschedulable != b.Spec.Unschedulable || len(a.Spec.Taints) != len(b.Spec.Taints) ||
		!maps.Equal(a.Labels, b.Labels) || len(a.Status.Allocatable) != len(b.Status.Allocatable) {
		return true
	}
	for i := range a.Spec.Taints {
		if !a.Spec.Taints[i].MatchTaint(&b.Spec.Taints[i]) || a.Spec.Taints[i].Value != b.Spec.Taints[i].Value {
			return true
		}
	}
	for k, q := range a.Status.Allocatable {
		if bq, ok := b.Status.Allocatable[k]; !ok || !q.Equal(bq) {
			return true
		}
	}
	return false
}

// NodeCount is the number of nodes in the scheduler's cache (what it can schedule to).
func (s *Scheduler) NodeCount() int {
	n, _ := s.cache.Counts()
	return n
}

// Pending returns the sizes of the queue's activeQ, backoffQ and unschedulable pool.
func (s *Scheduler) Pending() (active, backoff, unschedulable int) { return s.queue.Lens() }
