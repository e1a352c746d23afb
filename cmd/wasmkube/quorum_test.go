package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// quorumOutage is how long two of the three etcd members stay down: three times the
// components' 10 s renew deadline, so both lose their Leases for sure.
const quorumOutage = 30 * time.Second

// recoveryDeadline is issue 16's target: pods are bound and Deployments reconciled
// within 20 s of quorum coming back.
const recoveryDeadline = 20 * time.Second

// TestServerLeadershipSurvivesEtcdQuorumLoss runs `wasmkube server` (API server,
// scheduler and controller manager in process, leader-elected) on a 3-member etcd that
// the test starts, stops two members for 30 s (no quorum: the components cannot renew
// their Leases past the renew deadline and stop leading), starts them again, and checks
// that within 20 s of quorum coming back a new pod is bound, a new Deployment has its
// pods, and /readyz lists the scheduler and the controller manager as ok. Before the
// fix both components stopped for good on the lost Lease while /readyz said ok.
// It sends SIGTERM to the test process (runServerCmd): never run it in parallel.
func TestServerLeadershipSurvivesEtcdQuorumLoss(t *testing.T) {
	etcd := apiservertest.StartEtcd(t, 3)
	dir := t.TempDir()
	metricsAddr := freeAddr(t)
	stop, c := runServerCmd(t, dir, "--etcd-endpoints", strings.Join(etcd.Endpoints(), ","), "--metrics-addr", metricsAddr)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("server after SIGTERM: %v", err)
		}
	}()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nodesReady, nodesDone := make(chan struct{}), make(chan error, 1)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() {
		nodesDone <- hollow.Run(ctx, cfg, hollow.Options{Count: 2, Prefix: "quorum-", Ready: nodesReady, Logger: quiet})
	}()
	defer func() { cancel(); <-nodesDone }()
	select {
	case <-nodesReady:
	case err := <-nodesDone:
		t.Fatalf("hollow nodes: %v", err)
	}

	// Before the outage: both components lead and work.
	within(t, time.Minute, "a pod bound and a Deployment's pods bound before the outage", func() error {
		return workloadsScheduled(ctx, c, "before")
	})
	within(t, time.Minute, "/readyz ok before the outage", func() error { return readyz(cfg) })

	etcd.StopMember(1)
	etcd.StopMember(2)
	lostAt := time.Now()
	// The scheduler cannot renew its Lease past the 10 s renew deadline: it stops leading
	// (its metrics endpoint does not need etcd). Waited for within the outage only.
	within(t, quorumOutage, "the scheduler to stop leading while etcd has no quorum", func() error {
		m, err := httpGet("http://" + metricsAddr + "/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(m, "\nwasmkube_scheduler_is_leader 0\n") {
			return fmt.Errorf("wasmkube_scheduler_is_leader is not 0")
		}
		return nil
	})
	time.Sleep(time.Until(lostAt.Add(quorumOutage)))
	etcd.StartMember(1)
	etcd.StartMember(2)
	t.Logf("quorum back after %s without it", time.Since(lostAt).Round(time.Second))

	took := within(t, recoveryDeadline, "a new pod bound and a new Deployment's pods bound after quorum came back", func() error {
		return workloadsScheduled(ctx, c, "after")
	})
	t.Logf("pod and Deployment pods bound %s after quorum came back", took.Round(100*time.Millisecond))
	within(t, recoveryDeadline, "/readyz ok, with the scheduler and the controller manager, after quorum came back", func() error {
		return readyz(cfg)
	})
	for _, name := range controlPlaneLeases {
		l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease %s: %v", name, err)
		}
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(lostAt) {
			t.Errorf("lease %s not renewed since the outage: %+v", name, l.Spec)
		}
	}
}

// workloadsScheduled creates (once) a pod <prefix>-pod and a 2-replica Deployment
// <prefix>-web, and reports what is still missing: the pod bound, the Deployment's two
// pods created by its ReplicaSet and bound. Creates that fail (the API server is
// catching up with etcd) are tried again on the next call.
func workloadsScheduled(ctx context.Context, c kubernetes.Interface, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	podName, depName := prefix+"-pod", prefix+"-web"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}
	if _, err := c.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod: %w", err)
	}
	replicas := int32(2)
	labels := map[string]string{"app": depName}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: depName, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1"}}}}}}
	if _, err := c.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create deployment: %w", err)
	}
	p, err := c.CoreV1().Pods("default").Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("pod %s not bound", podName)
	}
	pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + depName})
	if err != nil {
		return err
	}
	bound := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			bound++
		}
	}
	if bound != int(replicas) {
		return fmt.Errorf("deployment %s: %d of %d pods (%d bound)", depName, len(pods.Items), replicas, bound)
	}
	return nil
}

// freeAddr is a loopback host:port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// readyz is nil when /readyz?verbose says ok and lists the in-process components.
func readyz(cfg *rest.Config) error {
	hc, err := rest.HTTPClientFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return err
	}
	hc.Timeout = 5 * time.Second
	resp, err := hc.Get(cfg.Host + "/readyz?verbose")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %d\n%s", resp.StatusCode, body)
	}
	for _, want := range []string{"[+]scheduler ok", "[+]controller-manager ok"} {
		if !strings.Contains(body, want) {
			return fmt.Errorf("/readyz lacks %q:\n%s", want, body)
		}
	}
	return nil
}

func httpGet(url string) (string, error) {
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// within polls cond every 250 ms until it returns nil, and fails the test with cond's
// last error if that does not happen within d. It returns how long it waited.
func within(t *testing.T, d time.Duration, what string, cond func() error) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d)
	for {
		err := cond()
		if err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s: %v", d, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
