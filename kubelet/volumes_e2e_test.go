package kubelet_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/internal/volumes"
)

const volumeSetManifest = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: web
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 0
      containers:
      - name: app
        image: wasmkube.local/busybox:latest
        imagePullPolicy: IfNotPresent
        command: [sh, -c, 'echo "pod $POD_UID" >> /data/log && touch /tmp/written && sleep 3600']
        env:
        - name: POD_UID
          valueFrom: {fieldRef: {fieldPath: metadata.uid}}
        readinessProbe:
          exec: {command: [cat, /tmp/written]}
          periodSeconds: 1
        volumeMounts: [{name: www, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
`

// TestStatefulSetClaimOnRealNode is issue 15's storage check on a real kubelet and
// containerd, with kubectl: a StatefulSet's pod writes to its claim (provisioned by the
// kubelet's local-path provisioner under its data dir, bound by the PV controller,
// bind-mounted into the container), is deleted, and its successor reads what it wrote;
// deleting the set and the claim then removes the volume and its directory (reclaim Delete).
func TestStatefulSetClaimOnRealNode(t *testing.T) {
	srv := apiservertest.Start(t)
	n := newNode(t, srv, "vol-node")
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	s, err := scheduler.New(ctx, scheduler.Options{RESTConfig: srv.SchedulerConfig(t), Logger: volTestLogger()})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	go func() {
		defer wg.Done()
		err := controller.Run(ctx, controller.Options{RESTConfig: srv.ControllerManagerConfig(t), Workers: 2, Logger: volTestLogger(), Registerer: prometheus.NewRegistry()})
		if err != nil && ctx.Err() == nil {
			t.Errorf("controller.Run: %v", err)
		}
	}()

	manifest := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(manifest, []byte(volumeSetManifest), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, srv, "apply", "-f", manifest)
	c := srv.Client
	first := waitPod(t, c, "default", "web-0", "ready", podReady)
	out := kubectl(t, srv, "get", "pvc", "www-web-0", "--no-headers")
	if f := strings.Fields(out); len(f) < 5 || f[1] != "Bound" || !strings.HasPrefix(f[2], "pvc-") || f[5] != "local-path" {
		t.Fatalf("kubectl get pvc www-web-0: %q", out)
	}
	pvName := strings.Fields(out)[2]
	pv, err := c.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := volumes.HostPath(pv)
	if pv.Labels[volumes.NodeLabel] != n.name || !strings.HasPrefix(dir, filepath.Join(n.root, "storage")+"/") {
		t.Fatalf("volume %s: labels %v, path %s (node root %s)", pv.Name, pv.Labels, dir, n.root)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "log")); err != nil || string(b) != "pod "+string(first.UID)+"\n" {
		t.Fatalf("the first pod's write in %s: %q %v", dir, b, err)
	}

	kubectl(t, srv, "delete", "pod", "web-0", "--wait=false")
	second := waitPod(t, c, "default", "web-0", "replaced and ready", func(p *v1.Pod) bool { return p.UID != first.UID && podReady(p) })
	got := kubectl(t, srv, "exec", "web-0", "--", "cat", "/data/log")
	if want := "pod " + string(first.UID) + "\npod " + string(second.UID) + "\n"; got != want {
		t.Fatalf("the successor reads %q from its claim, want %q", got, want)
	}

	// The set and its claim deleted, the volume (reclaim Delete) and its directory go.
	kubectl(t, srv, "delete", "statefulset", "web")
	kubectl(t, srv, "delete", "pvc", "www-web-0", "--wait=false")
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, err := c.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
		_, statErr := os.Stat(dir)
		if apierrors.IsNotFound(err) && os.IsNotExist(statErr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("volume %s: get %v, directory %v\n%s", pvName, err, statErr, kubectl(t, srv, "get", "pods,pvc,pv", "-o", "wide"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func volTestLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
}
