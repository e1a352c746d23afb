package apiserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// upstreamSchedulerPort is where the upstream scheduler serves its own HTTPS (healthz,
// metrics), on loopback (this file's share of the project's test ports).
const upstreamSchedulerPort = 28110

// writeKubeconfig writes cfg (a client certificate or a bearer token) as a kubeconfig.
func writeKubeconfig(t *testing.T, cfg *rest.Config, path string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["wasmkube"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, CertificateAuthority: cfg.CAFile}
	kc.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		ClientCertificate: cfg.CertFile, ClientKey: cfg.KeyFile, Token: cfg.BearerToken, TokenFile: cfg.BearerTokenFile}
	kc.Contexts["wasmkube"] = &clientcmdapi.Context{Cluster: "wasmkube", AuthInfo: "user"}
	kc.CurrentContext = "wasmkube"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a log the scheduler writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// missingAPI matches what client-go's reflectors and discovery log when the server does not
// serve a resource a component watches.
// and what its delegating authenticator logs without the ConfigMap upstream's API server
// publishes for it.
var missingAPI = regexp.MustCompile(`(?i)failed to (list|watch) \*|the server could not find the requested resource|no matches for kind|failed to sync|extension-apiserver-authentication.*not found`)

// TestUpstreamKubeScheduler runs upstream kube-scheduler v1.37, built unchanged by
// scripts/upstream-scheduler.sh into bin/kube-scheduler, against wasmkube's API server
// alone (no wasmkube scheduler), under the system:kube-scheduler credential and RBAC, with
// hollow nodes: every informer it starts must sync (no list or watch of a resource
// wasmkube does not serve fails in its log), it must schedule every pod (each bound with
// PodScheduled, an events.k8s.io/v1 Scheduled event from default-scheduler), and a pod
// whose ResourceClaim cannot be allocated stays Pending with its DRA plugin's reason.
// Skipped when bin/kube-scheduler has not been built (it takes many minutes).
func TestUpstreamKubeScheduler(t *testing.T) {
	bin, err := filepath.Abs("../../bin/kube-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("bin/kube-scheduler is not built: scripts/upstream-scheduler.sh builds upstream kube-scheduler v1.37.2 into bin/")
	}
	srv := apiservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	ready := make(chan struct{})
	hollowErr := make(chan error, 1)
	go func() {
		hollowErr <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 5, Ready: ready, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	select {
	case <-ready:
	case err := <-hollowErr:
		t.Fatalf("hollow nodes: %v", err)
	}

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "scheduler.kubeconfig")
	writeKubeconfig(t, srv.SchedulerConfig(t), kubeconfig)
	var log syncBuffer
	sched := exec.CommandContext(ctx, bin, "--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(upstreamSchedulerPort), "--cert-dir", dir, "-v", "2")
	sched.Stdout, sched.Stderr = &log, &log
	if err := sched.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = sched.Wait()
		if t.Failed() {
			t.Logf("kube-scheduler log:\n%s", log.String())
		}
	}()

	pods := srv.Client.CoreV1().Pods("default")
	const n = 20
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%d", i)}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, p := range list.Items {
			for _, c := range p.Status.Conditions {
				if p.Spec.NodeName != "" && c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
					bound++
				}
			}
		}
		return bound == n, nil
	})
	if err != nil {
		t.Fatalf("upstream kube-scheduler did not bind all %d pods: %v", n, err)
	}
	// Its event recorder writes asynchronously: wait for every pod's Scheduled event.
	scheduled := 0
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		events, err := srv.Client.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		scheduled = 0
		for _, e := range events.Items {
			if e.Reason == "Scheduled" && e.ReportingController == "default-scheduler" {
				scheduled++
			}
		}
		return scheduled == n, nil
	})
	if err != nil {
		t.Errorf("%d Scheduled events from default-scheduler, want %d: %v", scheduled, n, err)
	}

	// Its DynamicResources plugin reads the claim and the DeviceClasses wasmkube serves.
	if _, err := srv.Client.ResourceV1().ResourceClaims("default").Create(ctx, &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{
			{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "needs-gpu"}, Spec: corev1.PodSpec{
		ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}},
		Containers:     []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var msg string
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, "needs-gpu", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				msg = c.Message
				return p.Spec.NodeName == "", nil
			}
		}
		return false, nil
	})
	if err != nil || !strings.Contains(msg, "gpu.example.com") {
		t.Errorf("pod with an unallocatable claim: %v, message %q, want unschedulable naming the missing device class", err, msg)
	}

	for _, line := range strings.Split(log.String(), "\n") {
		if missingAPI.MatchString(line) {
			t.Errorf("kube-scheduler: %s", line)
		}
	}
}
