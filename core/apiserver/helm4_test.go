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

// helm4Binary is bin/helm4, Helm 4 built by scripts/deps.sh.
func helm4Binary(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../bin/helm4")
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("Helm 4 is required: run scripts/deps.sh (it builds bin/helm4): %v", err)
	return ""
}

// applyEntries maps each manager of the main resource to its operation.
func applyEntries(mf []metav1.ManagedFieldsEntry) map[string]metav1.ManagedFieldsOperationType {
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, e := range mf {
		if e.Subresource == "" {
			out[e.Manager] = e.Operation
		}
	}
	return out
}

// Helm 4 installs, upgrades, rolls back and uninstalls `helm create`'s chart with its
// default server-side apply: every object of the release is written by an Apply of the
// manager helm, an upgrade's changed value lands through the apply, and a field another
// manager took is a conflict until --force-conflicts, as against upstream's server.
func TestHelm4ServerSideApply(t *testing.T) {
	srv := apiservertest.Start(t)
	helm := helm4Binary(t)
	home := t.TempDir()
	runErr := func(args ...string) (string, error) {
		c := exec.Command(helm, append(args, "--kubeconfig", srv.KubeconfigPath)...)
		c.Dir = home
		c.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		out, err := c.CombinedOutput()
		return string(out), err
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := runErr(args...)
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	ctx := context.Background()
	apps := srv.Client.AppsV1().Deployments("default")

	run("create", "web")
	run("install", "web", "./web")
	d, err := apps.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("chart's deployment: %v", err)
	}
	if ops := applyEntries(d.ManagedFields); ops["helm"] != metav1.ManagedFieldsOperationApply {
		t.Fatalf("install: deployment managedFields %v, want an Apply by helm", ops)
	}
	sa, err := srv.Client.CoreV1().ServiceAccounts("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || applyEntries(sa.ManagedFields)["helm"] != metav1.ManagedFieldsOperationApply {
		t.Fatalf("install: service account %v %+v, want an Apply by helm", err, sa)
	}

	run("upgrade", "web", "./web", "--set", "replicaCount=3")
	if d, err = apps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("upgrade: %v replicas %v, want 3", err, d.Spec.Replicas)
	}

	// Another manager takes replicas (kubectl scale is an update through /scale): the next
	// upgrade's apply conflicts with it, as on upstream, until --force-conflicts takes it.
	k := newKubectl(t, srv)
	k.ok("scale", "deployment/web", "--replicas=5")
	if out, err := runErr("upgrade", "web", "./web", "--set", "replicaCount=2"); err == nil || !strings.Contains(out, "conflict") || !strings.Contains(out, ".spec.replicas") {
		t.Fatalf("upgrade over kubectl scale's replicas: %v, want a conflict naming .spec.replicas\n%s", err, out)
	}
	run("upgrade", "web", "./web", "--set", "replicaCount=2", "--force-conflicts")
	if d, err = apps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 2 {
		t.Fatalf("upgrade after kubectl scale: %v replicas %v, want 2", err, d.Spec.Replicas)
	}

	run("rollback", "web", "1")
	if d, err = apps.Get(ctx, "web", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Fatalf("rollback: %v replicas %v, want 1", err, d.Spec.Replicas)
	}
	if out := run("history", "web"); !strings.Contains(out, "Rollback to 1") || !strings.Contains(out, "deployed") {
		t.Fatalf("helm history:\n%s", out)
	}
	run("uninstall", "web")
	if _, err := apps.Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Fatal("uninstall left the deployment")
	}
	secrets, err := srv.Client.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
	if err != nil || len(secrets.Items) != 0 {
		t.Fatalf("release secrets after uninstall: %v %d", err, len(secrets.Items))
	}
	if out := run("list", "--failed", "--pending", "--deployed", "--superseded", "--uninstalled"); strings.Contains(out, "web") {
		t.Fatalf("helm list after uninstall:\n%s", out)
	}
}
