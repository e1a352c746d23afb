package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/internal/kubeclient"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// DeploymentBenchResult is the JSON printed by `wasmkube bench deployment --output json`.
type DeploymentBenchResult struct {
	Nodes    int `json:"nodes"`
	Replicas int `json:"replicas"`
	// ScaleUpSeconds: from creating the Deployment to all replicas available.
	ScaleUpSeconds float64 `json:"scale_up_seconds"`
	// RollingUpdateSeconds: from changing the image to the rollout complete (as
	// `kubectl rollout status` judges it).
	RollingUpdateSeconds float64 `json:"rolling_update_seconds"`
}

func init() {
	var (
		nodes, replicas int
		output, level   string
		timeout         time.Duration
		leaseInterval   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "deployment",
		Short: "Measure a Deployment's scale-up and rolling update end to end on hollow nodes",
		Long: `Start an embedded etcd and API server, --nodes hollow nodes, the scheduler and the controller
manager in one process; create a Deployment of --replicas pods and time it until every replica is
available; then change its image and time the rolling update (25% surge, 25% unavailable) until
the rollout is complete.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes <= 0 || replicas <= 0 {
				return fmt.Errorf("bench deployment: --nodes and --replicas must be positive")
			}
			if output != "text" && output != "json" {
				return fmt.Errorf("bench deployment: --output %q: must be text or json", output)
			}
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(level)); err != nil {
				return fmt.Errorf("bench deployment: --log-level %q: %w", level, err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
			res, err := runDeploymentBench(log, nodes, replicas, leaseInterval, timeout, output == "text")
			if err != nil {
				return err
			}
			if output == "json" {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "deployment of %d replicas on %d hollow nodes: %d available in %.2fs; rolling update complete in %.2fs\n",
				res.Replicas, res.Nodes, res.Replicas, res.ScaleUpSeconds, res.RollingUpdateSeconds)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 100, "hollow nodes")
	f.IntVar(&replicas, "replicas", 1000, "replicas of the Deployment")
	f.StringVar(&output, "output", "text", "text or json")
	f.StringVar(&level, "log-level", "warn", "log level of the components")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long per phase")
	f.DurationVar(&leaseInterval, "lease-interval", 10*time.Second, "hollow node lease renewal interval")
	benchCmd.AddCommand(cmd)
}

func runDeploymentBench(log *slog.Logger, nodes, replicas int, leaseInterval, timeout time.Duration, progress bool) (DeploymentBenchResult, error) {
	res := DeploymentBenchResult{Nodes: nodes, Replicas: replicas}
	say := func(format string, args ...any) {
		if progress {
			fmt.Fprintf(os.Stderr, format+"\n", args...)
		}
	}
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	dataDir, err := os.MkdirTemp("", "wasmkube-bench-deployment-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dataDir)
	ctx, cancel := signalContext()
	defer cancel()

	apiCtx, stopAPI := context.WithCancel(context.Background())
	defer stopAPI()
	srv, err := apiserver.New(apiCtx, apiserver.Options{DataDir: dataDir, Listen: "127.0.0.1:0", Logger: log})
	if err != nil {
		return res, err
	}
	apiDone := make(chan error, 1)
	go func() { apiDone <- srv.Run(apiCtx) }()
	select {
	case <-srv.Ready():
	case err := <-apiDone:
		return res, fmt.Errorf("bench deployment: API server: %w", err)
	}
	defer func() { stopAPI(); <-apiDone }()
	cfg := rest.CopyConfig(srv.AdminRESTConfig())
	cfg.QPS, cfg.Burst = 5000, 10000
	client, err := kubeclient.NewClientset(cfg)
	if err != nil {
		return res, err
	}

	compCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stop()
	ready := make(chan struct{})
	errs := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errs <- hollow.Run(compCtx, cfg, hollow.Options{Count: nodes, Ready: ready, LeaseInterval: leaseInterval, Logger: log})
	}()
	select {
	case <-ready:
	case err := <-errs:
		return res, fmt.Errorf("bench deployment: hollow nodes: %w", err)
	}
	sched, err := scheduler.New(compCtx, scheduler.Options{RESTConfig: cfg, Logger: log})
	if err != nil {
		return res, err
	}
	wg.Add(2)
	go func() { defer wg.Done(); errs <- sched.Run(compCtx) }()
	go func() {
		defer wg.Done()
		errs <- controller.Run(compCtx, controller.Options{RESTConfig: cfg, Logger: log, Registerer: prometheus.NewRegistry()})
	}()
	say("%d hollow nodes, scheduler and controllers running", nodes)

	n := int32(replicas)
	labels := map[string]string{"app": "bench"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1"}}},
			},
		},
	}
	// Phase times (text output only): when the last pod was created, bound and ready.
	var phases *podPhases
	if progress {
		phases = watchPodPhases(compCtx, client, replicas)
	}
	start := time.Now()
	if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return res, fmt.Errorf("bench deployment: create: %w", err)
	}
	if err := waitRolledOut(ctx, client, "bench", timeout, errs); err != nil {
		return res, fmt.Errorf("bench deployment: scale up: %w", err)
	}
	res.ScaleUpSeconds = time.Since(start).Seconds()
	say("%d replicas available in %.2fs%s", replicas, res.ScaleUpSeconds, phases.report(start))

	cur, err := client.AppsV1().Deployments("default").Get(ctx, "bench", metav1.GetOptions{})
	if err != nil {
		return res, err
	}
	cur.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	start = time.Now()
	if _, err := client.AppsV1().Deployments("default").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return res, fmt.Errorf("bench deployment: set image: %w", err)
	}
	if err := waitRolledOut(ctx, client, "bench", timeout, errs); err != nil {
		return res, fmt.Errorf("bench deployment: rolling update: %w", err)
	}
	res.RollingUpdateSeconds = time.Since(start).Seconds()
	say("rolling update complete in %.2fs", res.RollingUpdateSeconds)
	return res, nil
}

// waitRolledOut watches the Deployment until its rollout is complete by kubectl rollout
// status's rule: generation observed, every replica updated and available, none old.
func waitRolledOut(ctx context.Context, client kubernetes.Interface, name string, timeout time.Duration, errs <-chan error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := func(d *appsv1.Deployment) bool {
		st := d.Status
		n := *d.Spec.Replicas
		return d.Generation <= st.ObservedGeneration && st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n
	}
	for {
		d, err := client.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if done(d) {
			return nil
		}
		w, err := client.AppsV1().Deployments("default").Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: d.ResourceVersion})
		if err != nil {
			return err
		}
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && done(d) {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		select {
		case err := <-errs:
			return fmt.Errorf("a component stopped: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("not rolled out after %s", timeout)
		default:
		}
	}
}

// podPhases records when the pod count first reached n created, n bound and n ready.
type podPhases struct {
	mu                    sync.Mutex
	created, bound, ready time.Time
}

func watchPodPhases(ctx context.Context, client kubernetes.Interface, n int) *podPhases {
	ph := &podPhases{}
	go func() {
		w, err := client.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		defer w.Stop()
		seen, bound, ready := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			now := time.Now()
			seen[p.Name] = true
			if p.Spec.NodeName != "" {
				bound[p.Name] = true
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					ready[p.Name] = true
				}
			}
			ph.mu.Lock()
			if ph.created.IsZero() && len(seen) >= n {
				ph.created = now
			}
			if ph.bound.IsZero() && len(bound) >= n {
				ph.bound = now
			}
			if ph.ready.IsZero() && len(ready) >= n {
				ph.ready = now
				ph.mu.Unlock()
				return
			}
			ph.mu.Unlock()
		}
	}()
	return ph
}

func (ph *podPhases) report(start time.Time) string {
	if ph == nil {
		return ""
	}
	ph.mu.Lock()
	defer ph.mu.Unlock()
	at := func(t time.Time) string {
		if t.IsZero() {
			return "?"
		}
		return fmt.Sprintf("%.2fs", t.Sub(start).Seconds())
	}
	return fmt.Sprintf(" (all created at %s, bound at %s, ready at %s)", at(ph.created), at(ph.bound), at(ph.ready))
}
