package controller_test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlScenario drives a Deployment's life with the real kubectl only: create, scale,
// set image, rollout status/history/undo/pause/resume/restart, delete.
func TestKubectlScenario(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on wasmkube's machines): %v", err)
	}
	e := newEnv(t, envOpts{nodes: 3, ctrl: ctrlOpts()})
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(e.ctx, kubectl, append([]string{"--kubeconfig", e.srv.KubeconfigPath}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	images := func() map[string]int {
		m := map[string]int{}
		for _, p := range e.activePods("default", "kc") {
			m[p.Spec.Containers[0].Image]++
		}
		return m
	}

	run("create", "deployment", "kc", "--image=busybox:1", "--replicas=3")
	if out := run("rollout", "status", "deployment/kc", "--timeout=120s"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status: %s", out)
	}
	run("scale", "deployment/kc", "--replicas=5")
	run("rollout", "status", "deployment/kc", "--timeout=120s")
	e.eventually("5 pods", func() (bool, error) { n := images()["busybox:1"]; return n == 5, fmt.Errorf("%v", images()) })

	run("set", "image", "deployment/kc", "busybox=busybox:2")
	if out := run("rollout", "status", "deployment/kc", "--timeout=120s"); !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after set image: %s", out)
	}
	e.eventually("5 pods on busybox:2", func() (bool, error) {
		m := images()
		return m["busybox:2"] == 5 && len(m) == 1, fmt.Errorf("%v", m)
	})
	hist := run("rollout", "history", "deployment/kc")
	if !strings.Contains(hist, "\n1 ") || !strings.Contains(hist, "\n2 ") {
		t.Fatalf("rollout history lacks revisions 1 and 2:\n%s", hist)
	}

	run("rollout", "undo", "deployment/kc")
	run("rollout", "status", "deployment/kc", "--timeout=120s")
	e.eventually("back on busybox:1", func() (bool, error) {
		m := images()
		return m["busybox:1"] == 5 && len(m) == 1, fmt.Errorf("%v", m)
	})
	if out := run("get", "deployment", "kc", "-o", "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}"); out != "3" {
		t.Fatalf("revision after undo = %q, want 3", out)
	}

	// Pause: a template change waits; resume rolls it out. Restart rolls out a new revision
	// with the same image.
	run("rollout", "pause", "deployment/kc")
	run("set", "image", "deployment/kc", "busybox=busybox:3")
	e.eventually("paused rollout observed", func() (bool, error) {
		out := run("get", "deployment", "kc", "-o", "jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}")
		return out == "DeploymentPaused", fmt.Errorf("progressing reason %q", out)
	})
	if m := images(); m["busybox:1"] != 5 || len(m) != 1 {
		t.Fatalf("paused deployment rolled out: %v", m)
	}
	run("rollout", "resume", "deployment/kc")
	run("rollout", "status", "deployment/kc", "--timeout=120s")
	e.eventually("5 pods on busybox:3", func() (bool, error) {
		m := images()
		return m["busybox:3"] == 5 && len(m) == 1, fmt.Errorf("%v", m)
	})
	before := map[string]bool{}
	for _, p := range e.activePods("default", "kc") {
		before[p.Name] = true
	}
	run("rollout", "restart", "deployment/kc")
	run("rollout", "status", "deployment/kc", "--timeout=120s")
	e.eventually("every pod replaced by the restart", func() (bool, error) {
		pods := e.activePods("default", "kc")
		for _, p := range pods {
			if before[p.Name] {
				return false, fmt.Errorf("pod %s survived the restart", p.Name)
			}
		}
		return len(pods) == 5, fmt.Errorf("%d pods", len(pods))
	})

	run("delete", "deployment", "kc")
	e.eventually("nothing left behind", func() (bool, error) {
		_, err := e.client.AppsV1().Deployments("default").Get(e.ctx, "kc", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		rss, err := e.client.AppsV1().ReplicaSets("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=kc"})
		if err != nil {
			return false, err
		}
		pods, err := e.client.CoreV1().Pods("default").List(e.ctx, metav1.ListOptions{LabelSelector: "app=kc"})
		if err != nil {
			return false, err
		}
		return len(rss.Items) == 0 && len(pods.Items) == 0, fmt.Errorf("%d replicasets, %d pods", len(rss.Items), len(pods.Items))
	})
}
