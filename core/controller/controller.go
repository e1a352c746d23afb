// Package controller runs wasmkube's controllers in one process, as kube-controller-manager
// does: ReplicaSet, Deployment, StatefulSet, DaemonSet, Job, CronJob, node lifecycle (with
// taint-based eviction), node IPAM, garbage collector, pod GC, namespace, endpoints,
// EndpointSlices, LoadBalancer ingress (ServiceLB), ValidatingAdmissionPolicy type
// checking and WasmPolicy status and revisions, sharing one set of informers, behind
// a Lease-based leader election so that only one controller manager acts at a time.
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
	"k8s.io/client-go/tools/record"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/clock"

	"github.com/wasmkube/wasmkube/core/controller/admissionpolicystatus"
	"github.com/wasmkube/wasmkube/core/controller/cronjob"
	"github.com/wasmkube/wasmkube/core/controller/daemonset"
	"github.com/wasmkube/wasmkube/core/controller/deployment"
	"github.com/wasmkube/wasmkube/core/controller/disruption"
	"github.com/wasmkube/wasmkube/core/controller/endpoints"
	"github.com/wasmkube/wasmkube/core/controller/endpointslice"
	"github.com/wasmkube/wasmkube/core/controller/garbagecollector"
	"github.com/wasmkube/wasmkube/core/controller/job"
	"github.com/wasmkube/wasmkube/core/controller/namespace"
	"github.com/wasmkube/wasmkube/core/controller/nodeipam"
	"github.com/wasmkube/wasmkube/core/controller/nodelifecycle"
	"github.com/wasmkube/wasmkube/core/controller/persistentvolume"
	"github.com/wasmkube/wasmkube/core/controller/podautoscaler"
	"github.com/wasmkube/wasmkube/core/controller/podgc"
	"github.com/wasmkube/wasmkube/core/controller/replicaset"
	"github.com/wasmkube/wasmkube/core/controller/resourcequota"
	"github.com/wasmkube/wasmkube/core/controller/serviceaccount"
	"github.com/wasmkube/wasmkube/core/controller/servicelb"
	"github.com/wasmkube/wasmkube/core/controller/statefulset"
	"github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/core/controller/worker"
	"github.com/wasmkube/wasmkube/core/leaderelect"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
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
	// OnStartedLeading, if set, is called each time this instance has started its
	// controllers (once per term with LeaderElect).
	OnStartedLeading func()
	// JobBackoff is the delay before a Job's failed pod is replaced, doubled per further
	// failure up to 6 minutes (default 10s, as upstream); tests shorten it.
	JobBackoff time.Duration
	// Clock of the controllers that act on times of day or long deadlines: Job (deadlines,
	// back-off, TTL) and CronJob (schedules, and its queue's delays). Default the real
	// clock; tests pass a fake one (k8s.io/utils/clock/testing) and step it.
	Clock clock.WithTicker
	// ClusterCIDR is the range node IPAM cuts every Node's spec.podCIDR from (default
	// nodeipam.DefaultClusterCIDR), in subnets of NodeCIDRMaskSize bits (default 24).
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// HPASyncPeriod between two evaluations of a HorizontalPodAutoscaler (default 15s).
	HPASyncPeriod time.Duration
	// InsecureRegistries may be reached over plain HTTP when the wasmpolicy controller
	// resolves a WasmPolicy's image tag (loopback registries always may).
	InsecureRegistries []string
	// Status, if set, follows what Run does (starting, standby, leading, stopping a
	// term, stopped); its Check is the controller manager's health check.
	Status *leaderelect.Status
}

// Run runs all controllers until ctx is done. With LeaderElect it runs them in terms:
// each time it holds the Lease it builds and starts the controllers and their informers,
// and when it loses the Lease (another instance took it, or it could not renew it within
// the renew deadline, as while etcd has no quorum) it stops them all, waits until they
// have, and campaigns again; the next term builds everything afresh (core/leaderelect).
// On ctx cancellation it releases the Lease once the controllers have stopped, so a
// standby takes over at once. It returns nil when ctx ends, or an error if the options
// are unusable.
func Run(ctx context.Context, o Options) error {
	if o.Status == nil {
		o.Status = leaderelect.NewStatus()
	}
	if o.RESTConfig == nil {
		err := errors.New("controller manager: Options.RESTConfig is required")
		o.Status.Set(leaderelect.Stopped, err)
		return err
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
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	worker.RegisterMetrics(o.Registerer)
	cfg := rest.CopyConfig(o.RESTConfig)
	// One process drives thousands of pods: client-go's default 5 qps would make a
	// 1,000-replica rollout take minutes.
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "wasmkube-controller-manager"
	client, err := kubeclient.NewClientset(cfg)
	if err != nil {
		err = fmt.Errorf("controller manager: client: %w", err)
		o.Status.Set(leaderelect.Stopped, err)
		return err
	}
	if err := waitForAPI(ctx, client, o.Logger); err != nil {
		o.Status.Set(leaderelect.Stopped, err)
		return err
	}
	if !o.LeaderElect {
		o.Status.Set(leaderelect.Leading, nil)
		err := runControllers(ctx, cfg, client, o)
		o.Status.Set(leaderelect.Stopped, err)
		return err
	}

	id := o.Identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + string(uuid.NewUUID())
	}
	return leaderelect.Run(ctx, leaderelect.Config{
		Client: client.CoordinationV1(), Namespace: metav1.NamespaceSystem, Name: LeaseName, Identity: id,
		LeaseDuration: o.LeaseDuration, RenewDeadline: o.RenewDeadline, RetryPeriod: o.RetryPeriod,
		Component: "controller manager", Logger: o.Logger, Status: o.Status,
	}, func(lctx context.Context) error {
		return runControllers(lctx, cfg, client, o)
	})
}

// rootCA is the CA the controller manager trusts the API server with: the cluster CA
// that pods get in kube-root-ca.crt.
func rootCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 || cfg.CAFile == "" {
		return cfg.CAData, nil
	}
	return os.ReadFile(cfg.CAFile)
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
	ipam, err := nodeipam.New(client, f, recorder("node-ipam-controller"), nodeipam.Options{
		ClusterCIDR: o.ClusterCIDR, NodeMaskSize: o.NodeCIDRMaskSize}, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", nodeipam.Name, err)
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
	eps, err := endpointslice.New(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", endpointslice.Name, err)
	}
	epm, err := endpointslice.NewMirror(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", endpointslice.MirrorName, err)
	}
	lbs, err := servicelb.New(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", servicelb.Name, err)
	}
	caPEM, err := rootCA(cfg)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", serviceaccount.Name, err)
	}
	sac, err := serviceaccount.New(client, f, caPEM, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", serviceaccount.Name, err)
	}
	gc, err := garbagecollector.New(dyn, client.Discovery(), df, log)
	if err != nil {
		return err
	}
	jobs, err := job.New(client, f, recorder("job-controller"), job.Options{BackoffBase: o.JobBackoff, Now: o.Clock.Now}, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", job.Name, err)
	}
	pvs, err := persistentvolume.New(client, f, recorder("persistentvolume-controller"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", persistentvolume.Name, err)
	}
	sts, err := statefulset.New(client, f, recorder("statefulset-controller"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", statefulset.Name, err)
	}
	dss, err := daemonset.New(client, f, recorder("daemonset-controller"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", daemonset.Name, err)
	}
	cjs, err := cronjob.New(client, f, recorder("cronjob-controller"), o.Clock, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", cronjob.Name, err)
	}
	pdbs, err := disruption.New(client, f, recorder("controllermanager"), log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", disruption.Name, err)
	}
	rqs, err := resourcequota.New(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", resourcequota.Name, err)
	}
	aps, err := admissionpolicystatus.New(client, f, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", admissionpolicystatus.Name, err)
	}
	wps, err := wasmpolicy.New(client, dyn, f, df, recorder(wasmpolicy.Name), log, wasmpolicy.Options{InsecureRegistries: o.InsecureRegistries})
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", wasmpolicy.Name, err)
	}

	mc, err := metricsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("controller manager: %s: metrics client: %w", podautoscaler.Name, err)
	}
	hpa, err := podautoscaler.New(client, f, podautoscaler.ResourceMetrics{Client: mc}, recorder("horizontal-pod-autoscaler"),
		podautoscaler.Options{SyncPeriod: o.HPASyncPeriod}, log)
	if err != nil {
		return fmt.Errorf("controller manager: %s: %w", podautoscaler.Name, err)
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
	run(func() { ipam.Run(ctx, o.Workers) })
	run(func() { pgc.Run(ctx) })
	run(func() { aps.Run(ctx, 1) })
	run(func() { wps.Run(ctx, 2) })
	run(func() { ns.Run(ctx, o.Workers) })
	run(func() { ep.Run(ctx, o.Workers) })
	run(func() { eps.Run(ctx, o.Workers) })
	run(func() { epm.Run(ctx, o.Workers) })
	run(func() { lbs.Run(ctx, o.Workers) })
	run(func() { sac.Run(ctx, o.Workers) })
	run(func() { gc.Run(ctx, 2*o.Workers) })
	run(func() { jobs.Run(ctx, o.Workers) })
	run(func() { cjs.Run(ctx, o.Workers) })
	run(func() { sts.Run(ctx, o.Workers) })
	run(func() { pvs.Run(ctx, o.Workers) })
	run(func() { dss.Run(ctx, o.Workers) })
	run(func() { hpa.Run(ctx, o.Workers) })
	run(func() { pdbs.Run(ctx, o.Workers) })
	run(func() { rqs.Run(ctx, o.Workers) })
	log.Info("controllers started", "gcResources", len(gc.Resources()))
	<-ctx.Done()
	wg.Wait()
	f.Shutdown()
	df.Shutdown()
	return nil
}
