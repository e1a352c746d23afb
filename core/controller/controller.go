// Package controller runs wasmkube's controllers in one process, as kube-controller-manager
// does: ReplicaSet, Deployment, node lifecycle (with taint-based eviction), garbage
// collector, pod GC, namespace and endpoints, sharing one set of informers, behind a
// Lease-based leader election so that only one controller manager acts at a time.
package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/controller/deployment"
	"github.com/wasmkube/wasmkube/core/controller/endpoints"
	"github.com/wasmkube/wasmkube/core/controller/garbagecollector"
	"github.com/wasmkube/wasmkube/core/controller/namespace"
	"github.com/wasmkube/wasmkube/core/controller/nodelifecycle"
	"github.com/wasmkube/wasmkube/core/controller/podgc"
	"github.com/wasmkube/wasmkube/core/controller/replicaset"
	"github.com/wasmkube/wasmkube/core/controller/worker"
)

// LeaseName is the Lease in kube-system that controller managers compete for.
const LeaseName = "wasmkube-controller-manager"

// Options configure Run. Zero values take the defaults.
type Options struct {
	// RESTConfig reaches the API server (required). Run raises its QPS and Burst.
	RESTConfig *rest.Config
	// LeaderElect makes Run wait for the Lease before starting controllers.
	LeaderElect bool
	// NodeMonitorGracePeriod without a heartbeat before a node is Unknown (default 40s).
	NodeMonitorGracePeriod time.Duration
	// DefaultTolerationSeconds for pods with no not-ready/unreachable toleration (default 300).
	DefaultTolerationSeconds *int64
	// Workers per controller queue (default 5; the ReplicaSet controller gets twice as many).
	Workers int
	// Logger for all controllers (default slog.Default()).
	Logger *slog.Logger

	// Identity of this candidate in the Lease (default hostname_uuid).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod of the election (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Registerer receives the controller metrics (default prometheus.DefaultRegisterer).
	Registerer prometheus.Registerer
	// PodGCPeriod between pod GC passes (default 20s).
	PodGCPeriod time.Duration
	// OnStartedLeading, if set, is called when this instance starts its controllers.
	OnStartedLeading func()
}

// ErrLeaderLost is returned by Run when another instance took the Lease while ctx was still
// live; the caller should exit (as upstream's controller manager does) so it restarts clean.
var ErrLeaderLost = errors.New("controller manager: leader election lost")

// Run runs all controllers until ctx is done. With LeaderElect it first acquires the Lease
// and stops (returning ErrLeaderLost) if it loses it; on ctx cancellation it releases the
// Lease so a standby takes over at once.
func Run(ctx context.Context, o Options) error {
	if o.RESTConfig == nil {
		return errors.New("controller manager: Options.RESTConfig is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Workers <= 0 {
		o.Workers = 5
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.DefaultRegisterer
	}
	worker.RegisterMetrics(o.Registerer)
	cfg := rest.CopyConfig(o.RESTConfig)
	// One process drives thousands of pods: client-go's default 5 qps would make a
	// 1,000-replica rollout take minutes.
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "wasmkube-controller-manager"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controller manager: client: %w", err)
	}
	if err := waitForAPI(ctx, client, o.Logger); err != nil {
		return err
	}
	if !o.LeaderElect {
		return runControllers(ctx, cfg, client, o)
	}

	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: "kube-system"},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	le := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   durOr(o.LeaseDuration, 15*time.Second),
		RenewDeadline:   durOr(o.RenewDeadline, 10*time.Second),
		RetryPeriod:     durOr(o.RetryPeriod, 2*time.Second),
		ReleaseOnCancel: true,
		Name:            LeaseName,
	}
	// The elector starts OnStartedLeading in a goroutine of its own; state makes sure that
	// Run returns only after the controllers it started have stopped, and that a callback
	// arriving after Run decided to return starts nothing.
	const (
		idle = iota
		running
		finished
	)
	var (
		mu     sync.Mutex
		state  = idle
		runErr error
		done   = make(chan struct{})
	)
	leCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	le.Callbacks = leaderelection.LeaderCallbacks{
		OnStartedLeading: func(lctx context.Context) {
			mu.Lock()
			if state != idle {
				mu.Unlock()
				return
			}
			state = running
			mu.Unlock()
			defer close(done)
			o.Logger.Info("controller manager is the leader", "identity", id)
			if err := runControllers(lctx, cfg, client, o); err != nil {
				mu.Lock()
				runErr = err
				mu.Unlock()
				cancel()
			}
		},
		OnStoppedLeading: func() {
			o.Logger.Info("controller manager stopped leading", "identity", id)
		},
	}
	elector, err := leaderelection.NewLeaderElector(le)
	if err != nil {
		return fmt.Errorf("controller manager: leader election: %w", err)
	}
	elector.Run(leCtx)
	mu.Lock()
	started := state == running
	state = finished
	mu.Unlock()
	if !started {
		return nil // ctx ended before this instance ever led
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	if runErr != nil {
		return runErr
	}
	if ctx.Err() == nil {
		return ErrLeaderLost
	}
	return nil
}

// waitForAPI waits until the API server answers discovery, so that a controller manager
// started before (or restarted during) an API server outage waits instead of failing.
func waitForAPI(ctx context.Context, client kubernetes.Interface, log *slog.Logger) error {
	for delay := 200 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		_, err := client.Discovery().ServerVersion()
		if err == nil {
			return nil
		}
		log.Info("waiting for the API server", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}

func durOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func runControllers(ctx context.Context, cfg *rest.Config, client kubernetes.Interface, o Options) error {
	log := o.Logger
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controller manager: dynamic client: %w", err)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := func(component string) record.EventRecorder {
		return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	}

	f := informers.NewSharedInformerFactory(client, 0)
	df := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)

	rs, err := replicaset.New(client, f, recorder("replicaset-controller"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", replicaset.Name, err)
	}
	dep, err := deployment.New(client, f, recorder("deployment-controller"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", deployment.Name, err)
	}
	nl, err := nodelifecycle.New(client, f, recorder("node-controller"), nodelifecycle.Options{
		GracePeriod: o.NodeMonitorGracePeriod, DefaultTolerationSeconds: o.DefaultTolerationSeconds,
	}, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", nodelifecycle.Name, err)
	}
	pgc := podgc.New(client, f, podgc.Options{Period: o.PodGCPeriod}, log)
	ns, err := namespace.New(client, dyn, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", namespace.Name, err)
	}
	ep, err := endpoints.New(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", endpoints.Name, err)
	}
	gc, err := garbagecollector.New(dyn, client.Discovery(), df, log)
	if err != nil {
		return err
	}

	f.Start(ctx.Done())
	df.Start(ctx.Done())
	if o.OnStartedLeading != nil {
		o.OnStartedLeading()
	}
	var wg sync.WaitGroup
	run := func(fn func()) {
		wg.Add(1)
		go func() { defer wg.Done(); fn() }()
	}
	run(func() { rs.Run(ctx, 2*o.Workers) })
	run(func() { dep.Run(ctx, o.Workers) })
	run(func() { nl.Run(ctx, o.Workers) })
	run(func() { pgc.Run(ctx) })
	run(func() { ns.Run(ctx, o.Workers) })
	run(func() { ep.Run(ctx, o.Workers) })
	run(func() { gc.Run(ctx, 2*o.Workers) })
	log.Info("controllers started", "gcResources", len(gc.Resources()))
	<-ctx.Done()
	wg.Wait()
	f.Shutdown()
	df.Shutdown()
	return nil
}
