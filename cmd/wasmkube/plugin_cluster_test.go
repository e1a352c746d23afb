package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/kubelet/hollow"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// plugin test --cluster with placements, UPDATE rows, skips and per-resource namespaces:
// against `wasmkube server` (scheduler and controllers in process) with three hollow nodes
// (zones zone-0, zone-1, zone-2), a scheduler plugin's pod lands where its args allow and
// one it rejects everywhere stays unschedulable; an admission policy configured for UPDATE
// only denies the update of an unlabelled pod and skips its creation, and skip rows are
// reported as skipped; every object goes into its own namespace, which the run creates and
// deletes; a wrong node fails its row; the config is restored and no pod is left. In
// process, the placement rows are skipped.
func TestPluginTestGridPlacementsInCluster(t *testing.T) {
	zones := wasmbuild.Go(t, "wasm-examples/go/zone-filter")
	labels := wasmbuild.Go(t, "wasm-examples/go/require-labels")
	dir := t.TempDir()
	config := filepath.Join(dir, "wasmkube.yaml")
	original := "# the server's own config\nadmission:\n  policies: []\n"
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	stop, c := runServerCmd(t, filepath.Join(dir, "data"), "--config", config)
	defer func() { _ = stop() }()
	kubeconfig := filepath.Join(dir, "data", "admin.kubeconfig")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nodesDone := make(chan error, 1)
	go func() {
		nodesDone <- hollow.Run(ctx, rc, hollow.Options{Count: 3, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))})
	}()
	defer func() { cancel(); <-nodesDone }()
	waitUntil(t, "three hollow nodes", func() bool {
		ns, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		return err == nil && len(ns.Items) == 3
	})

	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("pods.yaml", `
{apiVersion: v1, kind: Pod, metadata: {name: web, namespace: team-a, labels: {team: a}}, spec: {containers: [{name: c, image: busybox}]}}
---
{apiVersion: v1, kind: Pod, metadata: {name: east, namespace: team-b, labels: {team: b}, annotations: {wasmkube.io/zone: zone-9}}, spec: {containers: [{name: c, image: busybox}]}}
---
{apiVersion: v1, kind: Pod, metadata: {name: unlabelled, namespace: team-b}, spec: {containers: [{name: c, image: busybox}]}}
`)
	grid := func(webNode string) string {
		return write("tests.yaml", `
policies:
- {name: zones, path: `+zones+`, args: {"zones": ["zone-1"]}}
- {name: require-labels, path: `+labels+`, args: {"labels": ["team"]}, kinds: [Pod], operations: [UPDATE]}
resources: [pods.yaml]
results:
- {policy: zones, resources: [team-a/web], result: pass, nodes: [`+webNode+`]}
- {policy: zones, resources: [team-b/east], result: fail, message: zone}
- {policy: zones, resources: [team-b/unlabelled], result: skip}
- {policy: require-labels, resources: [team-b/unlabelled], operation: UPDATE, result: fail, message: must carry label team}
- {policy: require-labels, resources: [team-a/web], operation: UPDATE, result: pass}
- {policy: require-labels, resources: [team-b/unlabelled], result: skip}
`)
	}
	o := &kitOptions{memoryLimit: "64Mi", output: "text", cluster: true, kubeconfig: kubeconfig,
		serverConfig: config, clusterTimeout: time.Minute}
	var out bytes.Buffer
	if err := runPluginTest(ctx, &out, grid("hollow-1"), nil, o); err != nil || !strings.Contains(out.String(), "4 passed, 0 failed, 2 skipped") {
		t.Fatalf("the grid in a cluster: %v\n%s", err, out.String())
	}
	for _, w := range []string{"PASS  zones / Pod team-a/web: pass (cluster)", "SKIP  zones / Pod team-b/unlabelled: skip (cluster)",
		"SKIP  require-labels / Pod team-b/unlabelled: skip (cluster)", "PASS  require-labels / Pod team-b/unlabelled: fail (cluster)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
	if b, _ := os.ReadFile(config); string(b) != original {
		t.Errorf("the server config was not restored:\n%s", b)
	}
	pods, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left after the run: %v %v", err, pods)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		n, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err == nil && n.DeletionTimestamp == nil {
			t.Errorf("namespace %s the run created is not deleted", ns)
		}
	}

	out.Reset()
	err = runPluginTest(ctx, &out, grid("hollow-0"), nil, o)
	if err == nil || !strings.Contains(out.String(), "want a node of [hollow-0], got node hollow-1") {
		t.Fatalf("a wrong placement: %v\n%s", err, out.String())
	}

	// In process: the placements are skipped, the admission rows run.
	g, err := wasmtest.LoadGrid(grid("hollow-1"))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := wasmtest.RunGrid(ctx, g, "", wasmtest.Options{})
	out.Reset()
	wasmtest.WriteText(&out, rs)
	if err != nil || !strings.Contains(out.String(), "2 passed, 0 failed, 4 skipped") || !strings.Contains(out.String(), "asserted against a live cluster") {
		t.Fatalf("the grid in process: %v\n%s", err, out.String())
	}
}
