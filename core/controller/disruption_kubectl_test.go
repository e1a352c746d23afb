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

// TestKubectlDrainHonoursPodDisruptionBudget: with the real kubectl, a budget that
// allows no disruption makes `kubectl drain` fail with upstream's message and keeps
// every pod; a budget that allows one lets drain evict exactly one (the replacement
// cannot be scheduled on the cordoned node, so the second eviction is refused).
func TestKubectlDrainHonoursPodDisruptionBudget(t *testing.T) {
	kubectlBin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is needed for this test (it is installed on wasmkube's machines): %v", err)
	}
	e := newEnv(t, envOpts{nodes: 1, ctrl: ctrlOpts()})
	dir := t.TempDir()
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(e.ctx, kubectlBin, append([]string{"--kubeconfig", e.srv.KubeconfigPath, "--cache-dir", filepath.Join(dir, "cache")}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	must("create", "deployment", "web", "--image=busybox:1", "--replicas=2")
	e.eventually("2 available", e.rolledOut("default", "web"))
	must("create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=2")
	e.eventually("budget status", func() (bool, error) {
		p, err := e.client.PolicyV1().PodDisruptionBudgets("default").Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := p.Status
		return s.ObservedGeneration == p.Generation && s.CurrentHealthy == 2 && s.DesiredHealthy == 2 && s.ExpectedPods == 2 && s.DisruptionsAllowed == 0,
			fmt.Errorf("status %+v", s)
	})
	if out := must("get", "pdb", "web"); !strings.Contains(out, "ALLOWED DISRUPTIONS") || !strings.Contains(out, "web    2               N/A               0") {
		t.Errorf("kubectl get pdb:\n%s", out)
	}
	before := e.activePods("default", "web")

	out, err := kubectl("drain", "hollow-0", "--ignore-daemonsets", "--timeout=12s")
	if err == nil {
		t.Fatalf("drain broke the budget:\n%s", out)
	}
	if !strings.Contains(out, "Cannot evict pod as it would violate the pod's disruption budget.") {
		t.Errorf("drain's refusal lacks upstream's message:\n%s", out)
	}
	if got := e.activePods("default", "web"); len(got) != 2 || got[0].UID != before[0].UID && got[0].UID != before[1].UID {
		t.Fatalf("pods changed although the budget allows no disruption: %d active", len(got))
	}

	// One disruption allowed: one pod goes, the other stays.
	must("patch", "pdb", "web", "--type=merge", "-p", `{"spec":{"minAvailable":1}}`)
	e.eventually("one disruption allowed", func() (bool, error) {
		p, err := e.client.PolicyV1().PodDisruptionBudgets("default").Get(e.ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.ObservedGeneration == p.Generation && p.Status.DisruptionsAllowed == 1, fmt.Errorf("status %+v", p.Status)
	})
	out, err = kubectl("drain", "hollow-0", "--ignore-daemonsets", "--timeout=12s")
	if err == nil {
		t.Fatalf("drain evicted both pods of a budget that allows one disruption:\n%s", out)
	}
	if !strings.Contains(out, "evicted") {
		t.Errorf("drain evicted nothing:\n%s", out)
	}
	left := 0
	for _, p := range e.activePods("default", "web") {
		for _, b := range before {
			if p.UID == b.UID {
				left++
			}
		}
	}
	if left != 1 {
		t.Fatalf("%d of the 2 original pods left after a drain under a budget allowing one disruption (want 1)", left)
	}
}
