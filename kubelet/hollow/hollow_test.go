package hollow_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

func TestHollowNodes(t *testing.T) {
	srv := apiservertest.Start(t)
	cfg := rest.CopyConfig(srv.Config)
	cfg.QPS, cfg.Burst = 1000, 2000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 4, Prefix: "h-", Ready: ready,
			LeaseInterval: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("hollow.Run: %v", err)
	}

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 4 {
		t.Fatalf("nodes: %v, %d", err, len(nodes.Items))
	}
	for _, n := range nodes.Items {
		var i int
		for j := range 4 {
			if n.Name == hollow.NodeName("h-", j) {
				i = j
			}
		}
		cpu := n.Status.Allocatable[v1.ResourceCPU]
		mem := n.Status.Allocatable[v1.ResourceMemory]
		pods := n.Status.Allocatable[v1.ResourcePods]
		if cpu.String() != "4" || mem.String() != "16Gi" || pods.String() != "110" ||
			n.Labels[v1.LabelHostname] != n.Name || n.Labels[v1.LabelTopologyZone] != []string{"zone-0", "zone-1", "zone-2"}[i%3] {
			t.Fatalf("node %s: allocatable %v labels %v", n.Name, n.Status.Allocatable, n.Labels)
		}
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == v1.NodeReady && c.Status == v1.ConditionTrue)
		}
		if !ready {
			t.Fatalf("node %s is not Ready: %+v", n.Name, n.Status.Conditions)
		}
	}

	// Leases are renewed.
	lease := func() time.Time {
		l, err := client.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(context.Background(), "h-2", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of h-2: %v", err)
		}
		return l.Spec.RenewTime.Time
	}
	first := lease()
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, false, func(context.Context) (bool, error) {
		return lease().After(first), nil
	}); err != nil {
		t.Fatalf("lease of h-2 not renewed: %v", err)
	}

	// A pod bound to a hollow node runs; deleting it finishes.
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: "h-1", Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var running *v1.Pod
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		running = p
		return err == nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP != "", nil
	}); err != nil {
		t.Fatalf("pod not Running: %v (%+v)", err, running.Status)
	}
	if len(running.Status.ContainerStatuses) != 1 || !running.Status.ContainerStatuses[0].Ready || running.Status.HostIP == "" {
		t.Fatalf("running pod status %+v", running.Status)
	}
	if err := client.CoreV1().Pods("default").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		t.Fatalf("graceful deletion not finished by the hollow node: %v", err)
	}

	// Stopping the process stops the heartbeats.
	stop()
	if err := <-done; err != nil {
		t.Fatalf("hollow.Run returned %v", err)
	}
	last := lease()
	time.Sleep(time.Second) // not a timing assertion: long enough for several renewals had they continued
	if !lease().Equal(last) {
		t.Fatal("lease renewed after the hollow nodes stopped")
	}

	// A restarted process takes its nodes back and heartbeats resume.
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	ready2 := make(chan struct{})
	done2 := make(chan error, 1)
	go func() {
		done2 <- hollow.Run(ctx2, srv.Config, hollow.Options{Count: 4, Prefix: "h-", Ready: ready2,
			LeaseInterval: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	select {
	case <-ready2:
	case err := <-done2:
		t.Fatalf("restart: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx2, 50*time.Millisecond, 10*time.Second, false, func(context.Context) (bool, error) {
		return lease().After(last), nil
	}); err != nil {
		t.Fatalf("heartbeats did not resume after a restart: %v", err)
	}
}
