package controller_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlQuotaLimitRangeAndPriority: with the real kubectl, a LimitRange's defaults
// appear on a pod that states no resources and its max refuses a bigger one; a
// ResourceQuota refuses the pod that would exceed it with a message naming the quota and
// the resource, `kubectl describe quota` shows used/hard, and deleting a pod frees its
// share; a pod's priorityClassName is resolved to spec.priority, an unknown one refused.
func TestKubectlQuotaLimitRangeAndPriority(t *testing.T) {
	kubectlBin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on wasmkube's machines): %v", err)
	}
	e := newEnv(t, envOpts{nodes: 1, ctrl: ctrlOpts()})
	dir := t.TempDir()
	kubectl := func(stdin string, args ...string) (string, error) {
		cmd := exec.CommandContext(e.ctx, kubectlBin, append([]string{"--kubeconfig", e.srv.KubeconfigPath, "--cache-dir", filepath.Join(dir, "cache"), "-n", "default"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := kubectl(stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must(`apiVersion: v1
kind: LimitRange
metadata: {name: limits}
spec:
  limits:
  - type: Container
    default: {cpu: 200m, memory: 64Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: compute}
spec:
  hard: {pods: "2", requests.cpu: 250m}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
`, "apply", "-f", "-")

	pod := func(name, extra string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: app
    image: busybox:1
%s`, name, extra)
	}
	must(pod("a", ""), "apply", "-f", "-")
	out := must("", "get", "pod", "a", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.limits.cpu} {.spec.containers[0].resources.limits.memory}")
	if out != "100m 200m 64Mi" {
		t.Errorf("LimitRange defaults on pod a: %q, want requests.cpu 100m, limits cpu 200m memory 64Mi", out)
	}
	out, err = kubectl(pod("big", "    resources: {limits: {cpu: \"2\"}}\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "maximum cpu usage per Container is 1, but limit is 2") {
		t.Errorf("a pod over the LimitRange's max: %v\n%s", err, out)
	}

	// Second pod: 200m of requests.cpu used; a third would take 300m > 250m.
	must(pod("b", "    resources: {requests: {cpu: 100m}}\n"), "apply", "-f", "-")
	out, err = kubectl(pod("c", "    resources: {requests: {cpu: 100m}}\n"), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("the quota admitted a third pod:\n%s", out)
	}
	for _, want := range []string{"forbidden", "exceeded quota: compute", "requested: pods=1,requests.cpu=100m", "used: pods=2,requests.cpu=200m", "limited: pods=2,requests.cpu=250m"} {
		if !strings.Contains(out, want) {
			t.Errorf("quota refusal lacks %q:\n%s", want, out)
		}
	}
	e.eventually("quota status", func() (bool, error) {
		q, err := e.client.CoreV1().ResourceQuotas("default").Get(e.ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p, c := q.Status.Used["pods"], q.Status.Used["requests.cpu"]
		return p.String() == "2" && c.String() == "200m", fmt.Errorf("used %v", q.Status.Used)
	})
	desc := must("", "describe", "quota", "compute")
	for _, want := range []string{"Name:", "compute", "Resource", "Used", "Hard", "pods          2     2", "requests.cpu  200m  250m"} {
		if !strings.Contains(desc, want) {
			t.Errorf("kubectl describe quota lacks %q:\n%s", want, desc)
		}
	}

	// Deleting a pod frees its share (the controller recounts).
	must("", "delete", "pod", "b", "--grace-period=0", "--force", "--wait=false")
	e.eventually("usage released", func() (bool, error) {
		q, err := e.client.CoreV1().ResourceQuotas("default").Get(e.ctx, "compute", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p := q.Status.Used["pods"]
		return p.String() == "1", fmt.Errorf("used %v", q.Status.Used)
	})
	must(pod("c", "  priorityClassName: high\n"), "apply", "-f", "-")
	if out := must("", "get", "pod", "c", "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}"); out != "1000 PreemptLowerPriority" {
		t.Errorf("priority of pod c: %q, want 1000 PreemptLowerPriority", out)
	}
	must("", "delete", "pod", "c", "--grace-period=0", "--force", "--wait=false")
	out, err = kubectl(pod("d", "  priorityClassName: nope\n"), "apply", "-f", "-")
	if err == nil || !strings.Contains(out, "no PriorityClass with name nope was found") {
		t.Errorf("unknown priority class: %v\n%s", err, out)
	}
	if out := must("", "get", "priorityclass", "system-node-critical", "-o", "jsonpath={.value}"); out != "2000001000" {
		t.Errorf("system-node-critical value %q", out)
	}
}
