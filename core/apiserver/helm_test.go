package apiserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// helmBinary is bin/helm, built by scripts/deps.sh (or one on PATH).
func helmBinary(t *testing.T) string {
	t.Helper()
	if p, err := filepath.Abs("../../bin/helm"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Fatalf("helm is required: run scripts/deps.sh (it builds bin/helm): %v", err)
	}
	return p
}

// helm's defaults end to end on `helm create`'s chart: releases in Secrets (the default
// driver), the chart's ServiceAccount, Deployment and Service; install, list, upgrade,
// history, rollback and uninstall.
func TestHelmChartLifecycle(t *testing.T) {
	srv := apiservertest.Start(t)
	helm := helmBinary(t)
	home := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(helm, append(args, "--kubeconfig", srv.KubeconfigPath)...)
		c.Dir = home
		c.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("create", "web")
	run("install", "web", "./web")
	ctx := context.Background()
	if sa, err := srv.Client.CoreV1().ServiceAccounts("default").Get(ctx, "web", metav1.GetOptions{}); err != nil || sa.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Fatalf("chart's service account: %v %v", err, sa)
	}
	if _, err := srv.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("chart's deployment: %v", err)
	}
	secrets, err := srv.Client.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(secrets.Items) != 1 || secrets.Items[0].Type != "helm.sh/release.v1" {
		t.Fatalf("release secret: %v %+v", err, secrets)
	}
	if out := run("list"); !strings.Contains(out, "web") || !strings.Contains(out, "deployed") {
		t.Fatalf("helm list:\n%s", out)
	}
	run("upgrade", "web", "./web", "--set", "replicaCount=2")
	if d, _ := srv.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); d == nil || *d.Spec.Replicas != 2 {
		t.Fatalf("upgrade did not scale: %+v", d)
	}
	if out := run("history", "web"); strings.Count(out, "\n") != 3 {
		t.Fatalf("helm history:\n%s", out)
	}
	run("rollback", "web", "1")
	if d, _ := srv.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{}); d == nil || *d.Spec.Replicas != 1 {
		t.Fatalf("rollback did not restore replicas: %+v", d)
	}
	if out := run("list", "-o", "json"); !strings.Contains(out, `"revision":"3"`) || !strings.Contains(out, `"status":"deployed"`) {
		t.Fatalf("helm list after rollback:\n%s", out)
	}
	run("uninstall", "web")
	if _, err := srv.Client.CoreV1().ServiceAccounts("default").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Fatal("uninstall left the service account")
	}
	if out := run("list", "--all"); strings.Contains(out, "web") {
		t.Fatalf("helm list after uninstall:\n%s", out)
	}
}
