package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestKubectlAutoscaleV1: kubectl autoscale (which posts autoscaling/v1) creates an HPA
// that kubectl get shows with upstream's columns and defaults, both versions read the same
// object, the v2-only fields survive a v1 client's read-modify-write in the
// autoscaling.alpha annotations, v1 watches see v2 writes, and a bad v1 HPA is refused with
// the v1 field named.
func TestKubectlAutoscaleV1(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("create", "deployment", "web", "--image=busybox", "-n", "default")
	out := k.ok("autoscale", "deployment", "web", "--cpu-percent=50", "--min=1", "--max=5", "-n", "default")
	if !strings.Contains(out, "horizontalpodautoscaler.autoscaling/web autoscaled") {
		t.Fatalf("kubectl autoscale: %s", out)
	}
	got := k.ok("get", "hpa", "-n", "default")
	if h := header(got); h != "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE" {
		t.Errorf("kubectl get hpa columns: %q", h)
	}
	if row := strings.Fields(strings.Split(strings.TrimSpace(got), "\n")[1]); strings.Join(row[:7], " ") != "web Deployment/web cpu: <unknown>/50% 1 5 0" {
		t.Errorf("kubectl get hpa row: %q", row)
	}
	if v := k.ok("get", "horizontalpodautoscalers.v2.autoscaling", "web", "-n", "default", "-o", "jsonpath={.apiVersion} {.spec.minReplicas} {.spec.metrics[0].resource.name} {.spec.metrics[0].resource.target.type} {.spec.metrics[0].resource.target.averageUtilization}"); v != "autoscaling/v2 1 cpu Utilization 50" {
		t.Errorf("v2 view of the autoscaled HPA: %q", v)
	}
	if v := k.ok("get", "horizontalpodautoscalers.v1.autoscaling", "web", "-n", "default", "-o", "jsonpath={.apiVersion} {.spec.targetCPUUtilizationPercentage} {.metadata.annotations}"); v != "autoscaling/v1 50 " {
		t.Errorf("v1 view of the autoscaled HPA: %q", v)
	}

	// Without --cpu-percent: upstream's implicit 80% CPU target.
	k.ok("create", "deployment", "api", "--image=busybox", "-n", "default")
	k.ok("autoscale", "deployment", "api", "--max=3", "-n", "default")
	if v := k.ok("get", "hpa", "api", "-n", "default", "-o", "jsonpath={.spec.minReplicas} {.spec.metrics[0].resource.target.averageUtilization}"); v != "1 80" {
		t.Errorf("default CPU target: %q", v)
	}

	// A v2 HPA with what v1 cannot say: a pods metric and a partial behavior.
	k.ok("apply", "-f", k.file("v2.yaml", `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: rich, namespace: default, annotations: {team: a}}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  metrics:
  - type: Pods
    pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: "10"}}
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 60}}
  behavior:
    scaleUp: {stabilizationWindowSeconds: 30}
`))
	if v := k.ok("get", "hpa", "rich", "-n", "default", "-o", "jsonpath={.spec.minReplicas} {.spec.behavior.scaleUp.stabilizationWindowSeconds} {.spec.behavior.scaleUp.selectPolicy} {.spec.behavior.scaleUp.policies[*].type} {.spec.behavior.scaleDown.policies[0].value}"); v != "1 30 Max Pods Percent 100" {
		t.Errorf("v2 behavior defaults: %q", v)
	}
	raw := k.ok("get", "horizontalpodautoscalers.v1.autoscaling", "rich", "-n", "default", "-o", "json")
	var v1 autoscalingv1.HorizontalPodAutoscaler
	if err := json.Unmarshal([]byte(raw), &v1); err != nil {
		t.Fatal(err)
	}
	if *v1.Spec.TargetCPUUtilizationPercentage != 60 || v1.Annotations["team"] != "a" ||
		!strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], `"metricName":"rps"`) ||
		!strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/behavior"], `"stabilizationWindowSeconds":30`) {
		t.Fatalf("v1 view of a v2 HPA:\n%s", raw)
	}
	// A v1 client's read-modify-write keeps the v2-only fields.
	v1.Spec.MaxReplicas = 7
	b, _ := json.Marshal(&v1)
	k.ok("replace", "-f", k.file("v1.json", string(b)))
	if v := k.ok("get", "hpa", "rich", "-n", "default", "-o", "jsonpath={.spec.maxReplicas} {.spec.metrics[0].type} {.spec.metrics[0].pods.metric.name} {.spec.metrics[1].resource.target.averageUtilization} {.spec.behavior.scaleUp.stabilizationWindowSeconds} {.metadata.annotations.team} {.metadata.annotations.autoscaling\\.alpha\\.kubernetes\\.io/metrics}"); v != "7 Pods rps 60 30 a " {
		t.Errorf("v2 after a v1 replace: %q", v)
	}

	// A v1 watch sees a v2 write, converted.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w, err := srv.Client.AutoscalingV1().HorizontalPodAutoscalers("default").Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	k.ok("patch", "horizontalpodautoscalers.v2.autoscaling", "web", "-n", "default", "--type=merge", "-p", `{"spec":{"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]}}`)
	for seen := false; !seen; {
		select {
		case ev := <-w.ResultChan():
			h, ok := ev.Object.(*autoscalingv1.HorizontalPodAutoscaler)
			seen = ok && h.Spec.TargetCPUUtilizationPercentage != nil && *h.Spec.TargetCPUUtilizationPercentage == 70
		case <-ctx.Done():
			t.Fatal("the v1 watch did not see the v2 patch")
		}
	}
	list, err := srv.Client.AutoscalingV1().HorizontalPodAutoscalers("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 3 {
		t.Fatalf("v1 list: %v %v", err, list)
	}

	out, err = k.run("apply", "-f", k.file("bad.yaml", `apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: bad, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 1
  targetCPUUtilizationPercentage: 0
`))
	if err == nil || !strings.Contains(out, "spec.targetCPUUtilizationPercentage: Invalid value: 0: must be greater than 0") ||
		!strings.Contains(out, "spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`") {
		t.Errorf("bad v1 HPA: %v\n%s", err, out)
	}
}
