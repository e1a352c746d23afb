package controller_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/kubelet/hollow"
)

// TestHPAScalesADeploymentOnCPU runs the real API server, scheduler, controller manager and
// two hollow nodes that serve /stats/summary with a CPU usage the test sets. The API
// server's metrics.k8s.io answers from them, kubectl top shows the numbers, and an HPA
// made by kubectl autoscale (autoscaling/v1) at 50% of a 100m request scales the
// Deployment from 1 to 4 when a load of 200m is shared by its pods, keeps it there (50%
// each), and scales it down to 1 when the load drops to 20m.
func TestHPAScalesADeploymentOnCPU(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithLogger(testLogger()))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	// The load is a total the test sets, shared by the Deployment's running pods, as a
	// service's traffic is: more pods, less each.
	var milli atomic.Int64
	milli.Store(200)
	usage := func(p *corev1.Pod) (resource.Quantity, resource.Quantity, bool) {
		pods, err := srv.Client.CoreV1().Pods(p.Namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return resource.Quantity{}, resource.Quantity{}, false
		}
		running := int64(0)
		for _, q := range pods.Items {
			if q.Status.Phase == corev1.PodRunning && q.DeletionTimestamp == nil {
				running++
			}
		}
		return *resource.NewMilliQuantity(milli.Load()/max(running, 1), resource.DecimalSI), resource.MustParse("32Mi"), true
	}
	ready := make(chan struct{})
	errc := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		errc <- hollow.Run(ctx, srv.Config, hollow.Options{Count: 2, Prefix: "hpa-", Ready: ready, ServeStats: true, Usage: usage, Logger: testLogger()})
	}()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("hollow nodes: %v", err)
	}
	s, err := scheduler.New(ctx, scheduler.Options{RESTConfig: srv.Config, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	e := &env{t: t, wg: &wg, srv: srv, client: srv.Client, ctx: ctx}
	e.controllers(ctx, &wg, controller.Options{HPASyncPeriod: time.Second})

	d := newDeployment("web", 1, "wasmkube.local/busybox:latest")
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
	if _, err := srv.Client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("a running pod", func() (bool, error) {
		pods := e.activePods("default", "web")
		return len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning, nil
	})

	// kubectl top reads metrics.k8s.io as upstream's kubectl does.
	top := func(args ...string) string {
		out, err := exec.Command("kubectl", append([]string{"--kubeconfig", srv.KubeconfigPath}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := top("top", "pod", "-n", "default"); !strings.Contains(out, "web-") || !strings.Contains(out, "200m") || !strings.Contains(out, "32Mi") {
		t.Fatalf("kubectl top pod:\n%s", out)
	}
	if out := top("top", "node"); !strings.Contains(out, "hpa-0") || !strings.Contains(out, "hpa-1") {
		t.Fatalf("kubectl top node:\n%s", out)
	}

	// kubectl autoscale posts autoscaling/v1; the scale-down window only v2 can name is
	// patched in through v2 (no window, so the test need not wait the default 5 minutes).
	top("autoscale", "deployment", "web", "-n", "default", "--cpu-percent=50", "--min=1", "--max=5")
	top("patch", "horizontalpodautoscalers.v2.autoscaling", "web", "-n", "default", "--type=merge", "-p", `{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":0}}}}`)
	replicas := func() int32 {
		d, err := srv.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return *d.Spec.Replicas
	}
	// 200m of 100m is 200%, four times the target: 1 pod becomes 4.
	e.eventually("4 replicas", func() (bool, error) { return replicas() == 4, fmt.Errorf("replicas %d", replicas()) })
	e.eventually("HPA status at 4 with the pods' utilization", func() (bool, error) {
		h, err := srv.Client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := h.Status
		ok := st.DesiredReplicas == 4 && len(st.CurrentMetrics) == 1 && st.CurrentMetrics[0].Resource != nil &&
			ptr.Deref(st.CurrentMetrics[0].Resource.Current.AverageUtilization, 0) == 200 && st.LastScaleTime != nil &&
			hasCondition(st, autoscalingv2.ScalingActive, corev1.ConditionTrue) && hasCondition(st, autoscalingv2.AbleToScale, corev1.ConditionTrue)
		return ok, fmt.Errorf("status %+v", st)
	})
	if out := top("get", "hpa", "web"); !strings.Contains(out, "cpu: 200%/50%") {
		t.Fatalf("kubectl get hpa:\n%s", out)
	}
	if out := top("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-o", "jsonpath={.status.currentCPUUtilizationPercentage} {.status.desiredReplicas}"); out != "200 4" {
		t.Fatalf("the v1 view of the HPA's status: %q", out)
	}

	// Shared by 4 pods the load is 50m each, 50%: the count stays (within the tolerance).
	e.eventually("the HPA measuring 4 pods at 50%", func() (bool, error) {
		h, err := srv.Client.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || len(h.Status.CurrentMetrics) == 0 {
			return false, err
		}
		return h.Status.CurrentReplicas == 4 && ptr.Deref(h.Status.CurrentMetrics[0].Resource.Current.AverageUtilization, 0) == 50, nil
	})
	if r := replicas(); r != 4 {
		t.Fatalf("at the target the HPA changed the replicas to %d", r)
	}
	// A tenth of the load: 5% each, a tenth of the target; 4 pods become 1.
	milli.Store(20)
	e.eventually("1 replica", func() (bool, error) { return replicas() == 1, fmt.Errorf("replicas %d", replicas()) })
}

func hasCondition(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus) bool {
	for _, c := range st.Conditions {
		if c.Type == t && c.Status == s {
			return true
		}
	}
	return false
}
