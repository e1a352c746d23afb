package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

func TestPluginCheck(t *testing.T) {
	opts := func(args string) *pluginCheckOptions {
		// A generous limit: the test checks what check reports, and a Go guest's collector
		// can pause a call past 100 ms on a loaded machine.
		return &pluginCheckOptions{args: args, timeout: 2 * time.Second, memoryLimit: "64Mi", benchNodes: 10}
	}
	tests := []struct {
		name    string
		file    string
		args    string
		wantErr string
		want    []string
	}{
		{"wat filter", wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat"), "", "",
			[]string{"ABI:          v1", "entry points: wasmkube_filter", "wasmkube_filter          ok", "1 of 1 node(s) passed",
				"bench:        wasmkube_filter          10 nodes per call", "result:       OK"}},
		{"all kinds", wasmbuild.Go(t, "sdk/go/internal/testguest"), `{"greeting":"hi"}`, "",
			[]string{"wasmkube_prefilter, wasmkube_filter, wasmkube_postfilter, wasmkube_prescore, wasmkube_score, wasmkube_normalizescore",
				"wasmkube_score           ok", "scores [4]", "nominated wasmkube-smoke-node", "result:       OK"}},
		{"wrong ABI", wasmbuild.WAT(t, "plugins/testdata/v2.wat"), "", "exports wasmkube_abi_version 2, this host supports 1",
			[]string{"result:       REJECTED"}},
		{"prescore skip leaves score out", wasmbuild.WAT(t, "plugins/testdata/skipscore.wat"), "", "",
			[]string{"wasmkube_prescore        ok", "wasmkube_score           skip", "wasmkube_prescore returned Skip", "result:       OK"}},
		{"admission policy", wasmbuild.Go(t, "wasm-examples/go/require-labels"), `{"labels":["team"]}`, "",
			[]string{"entry points: wasmkube_validate", "admission request: CREATE pod default/wasmkube-smoke", "wasmkube_validate        ok", "result:       OK"}},
		{"probe plugin", wasmbuild.Go(t, "wasm-examples/go/json-health-probe"), `{"port": 8080, "path": "/health", "field": "status", "value": "ok"}`, "",
			[]string{"entry points: wasmkube_probe", "kubelet hook: pod default/wasmkube-smoke", "wasmkube_probe           ok", "result:       OK"}},
		{"smoke trap", wasmbuild.WAT(t, "plugins/testdata/alwaystrap.wat"), "", "plugin check failed",
			[]string{"wasmkube_score           FAILED", "trap: wasm error: unreachable", "result:       REJECTED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := opts(tt.args)
			var out bytes.Buffer
			err := runPluginCheck(context.Background(), &out, tt.file, o)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q\n%s", err, tt.wantErr, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

// Real objects from files replace the synthetic pod and node.
func TestPluginCheckWithObjects(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pod := write("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	ok := write("ok.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: ok}\n")
	draining := write("draining.yaml", "apiVersion: v1\nkind: Node\nmetadata:\n  name: draining\n  labels: {wasmkube.io/drain: \"\"}\n")
	var out bytes.Buffer
	o := &pluginCheckOptions{timeout: 2 * time.Second, memoryLimit: "64Mi", podFile: pod, nodeFiles: []string{ok, draining}}
	if err := runPluginCheck(context.Background(), &out, wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat"), o); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, w := range []string{"pod shop/web on node(s) ok, draining", "1 of 2 node(s) passed; draining rejected: UnschedulableAndUnresolvable: node is draining"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	o.podFile = write("bad.yaml", "metadata: {name: x}\nspec: {containerz: []}\n")
	if err := runPluginCheck(context.Background(), &out, wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat"), o); err == nil || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("a pod file with an unknown field: got %v", err)
	}
}

// An unknown verb is an error, not a help page with exit status 0.
func TestUnknownSubcommandIsAnError(t *testing.T) {
	refuseUnknownSubcommands(rootCmd)
	for _, args := range [][]string{{"plugin", "no-such-verb"}, {"bench", "nothing"}, {"image", "frobnicate"}} {
		rootCmd.SetArgs(args)
		var out bytes.Buffer
		rootCmd.SetOut(&out)
		err := rootCmd.Execute()
		if err == nil || !strings.Contains(err.Error(), `unknown command "`+args[1]+`" for "wasmkube `+args[0]+`"`) {
			t.Errorf("wasmkube %v: got %v, want an unknown-command error", args, err)
		}
	}
	rootCmd.SetArgs([]string{"plugin"})
	if err := rootCmd.Execute(); err != nil {
		t.Errorf("wasmkube plugin without a verb: %v, want the help", err)
	}
}

// plugin bench --save writes a baseline; --compare exits non-zero on a regression
// (a baseline made faster than any run) and zero without one (a baseline made slower).
func TestPluginBenchGate(t *testing.T) {
	ctx := context.Background()
	mod := wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat")
	saved := filepath.Join(t.TempDir(), "base.yaml")
	o := &benchOptions{memoryLimit: "64Mi", output: "text", timeout: 10 * time.Second, per: 10 * time.Millisecond, sizes: []int{10}, concurrency: 2, save: saved, threshold: 10}
	var out bytes.Buffer
	if err := runPluginBench(ctx, &out, mod, o); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"allocs/op", "bytes/op", "Filter"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("bench output lacks %q:\n%s", w, out.String())
		}
	}
	base, err := wasmtest.LoadBaseline(saved)
	if err != nil || len(base.Rows) != 1 || base.Rows[0].Concurrency != 2 {
		t.Fatalf("saved baseline: %+v, %v", base, err)
	}
	for _, tt := range []struct {
		p50     time.Duration
		regress bool
	}{{time.Nanosecond, true}, {time.Hour, false}} {
		base.Rows[0].P50, base.Rows[0].AllocsPerCall = tt.p50, 1e9
		file := filepath.Join(t.TempDir(), "b.json")
		if err := wasmtest.SaveBaseline(file, *base); err != nil {
			t.Fatal(err)
		}
		o := *o
		o.save, o.compare, o.output = "", file, "json"
		out.Reset()
		err := runPluginBench(ctx, &out, mod, &o)
		var re *wasmtest.RegressionError
		if tt.regress != errors.As(err, &re) {
			t.Errorf("baseline p50 %s: error %v, want a regression: %v\n%s", tt.p50, err, tt.regress, out.String())
		}
		if !strings.Contains(out.String(), `"comparison"`) {
			t.Errorf("JSON output without the comparison:\n%s", out.String())
		}
	}
	o.compare, o.save = mod, ""
	if err := runPluginBench(ctx, &out, mod, o); err == nil || !strings.Contains(err.Error(), "use --with") {
		t.Errorf("--compare with a module: %v", err)
	}
}

// conformance and test exit non-zero on any failure, with a JUnit report on stdout.
func TestPluginKitJUnitAndExit(t *testing.T) {
	mod := wasmbuild.WAT(t, "plugins/wasmtest/testdata/countdeny.wat")
	var out bytes.Buffer
	err := runPluginConformance(context.Background(), &out, mod, &kitOptions{memoryLimit: "64Mi", output: "junit"})
	if err == nil || !strings.Contains(out.String(), "<testsuite") || !strings.Contains(out.String(), "<failure") {
		t.Fatalf("conformance of a stateful validate: error %v\n%s", err, out.String())
	}
}

// plugin test runs a tests.yaml grid without a module argument; a broken policy fails it
// with a JUnit report and a non-zero exit.
func TestPluginTestGrid(t *testing.T) {
	ctx := context.Background()
	for _, ex := range []string{"require-labels", "default-resources", "disallow-latest-tag"} {
		wasmbuild.Go(t, "wasm-examples/go/"+ex)
	}
	var out bytes.Buffer
	grid := filepath.Join(wasmbuild.Root(), "wasm-examples/go/admission-grid/tests.yaml")
	if err := runPluginTest(ctx, &out, grid, nil, &kitOptions{memoryLimit: "64Mi", output: "text"}); err != nil || !strings.Contains(out.String(), "5 passed, 0 failed, 2 skipped") {
		t.Fatalf("the example grid: %v\n%s", err, out.String())
	}
	dir := t.TempDir()
	broken := wasmbuild.WAT(t, "plugins/admitwasm/testdata/misbehave.wat")
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), []byte(`
policies: [{name: misbehave, path: `+broken+`}]
resources: [pods.yaml]
results:
- {policy: misbehave, resources: [trap], result: pass}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pods.yaml"), []byte("{apiVersion: v1, kind: Pod, metadata: {name: trap, namespace: default, labels: {misbehave: trap}}, spec: {containers: [{name: c, image: busybox}]}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err := runPluginTest(ctx, &out, filepath.Join(dir, "tests.yaml"), nil, &kitOptions{memoryLimit: "64Mi", output: "junit"})
	if err == nil || !strings.Contains(out.String(), `failures="1"`) || !strings.Contains(out.String(), "plugin failure in validate: trap") {
		t.Fatalf("a trapping policy: %v\n%s", err, out.String())
	}
}

// plugin test --cluster: the example grid against a running API server, each policy
// swapped into its config file and out again; a wrong expectation fails its row; the
// config is restored and nothing the run created is left.
func TestPluginTestGridInCluster(t *testing.T) {
	for _, ex := range []string{"require-labels", "default-resources", "disallow-latest-tag"} {
		wasmbuild.Go(t, "wasm-examples/go/"+ex)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "wasmkube.yaml")
	original := "# the server's own config\nadmission:\n  policies: []\n"
	if err := os.WriteFile(config, []byte(original), 0o600); err != nil {
		t.Fatal(err)
	}
	// With the controllers: the namespace the first run made and deleted is gone (the
	// namespace controller) before the second run makes it again.
	stop, c := runServerCmd(t, filepath.Join(dir, "data"), "--config", config)
	defer func() { _ = stop() }()
	o := &kitOptions{memoryLimit: "64Mi", output: "text", cluster: true, kubeconfig: filepath.Join(dir, "data", "admin.kubeconfig"),
		serverConfig: config, clusterTimeout: 30 * time.Second}
	var out bytes.Buffer
	grid := filepath.Join(wasmbuild.Root(), "wasm-examples/go/admission-grid/tests.yaml")
	if err := runPluginTest(context.Background(), &out, grid, nil, o); err != nil || !strings.Contains(out.String(), "5 passed, 0 failed, 2 skipped") {
		t.Fatalf("the example grid in a cluster: %v\n%s", err, out.String())
	}
	b, _ := os.ReadFile(config)
	if string(b) != original {
		t.Errorf("the server config was not restored:\n%s", b)
	}
	pods, err := c.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods left after the run: %v %v", err, pods)
	}

	wrong := filepath.Join(dir, "tests.yaml")
	ex := filepath.Join(wasmbuild.Root(), "wasm-examples/go/admission-grid")
	if err := os.WriteFile(wrong, []byte(`
policies:
- {name: require-labels, path: `+filepath.Join(wasmbuild.Root(), "wasm-examples/go/require-labels/require-labels.wasm")+`, args: {"labels": ["team"]}, kinds: [Pod]}
resources: [`+filepath.Join(ex, "resources.yaml")+`]
results:
- {policy: require-labels, resources: [shop/unlabelled], result: pass}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	err = runPluginTest(context.Background(), &out, wrong, nil, o)
	if err == nil || !strings.Contains(out.String(), `want pass, got fail: "admission policy require-labels denied the request`) {
		t.Fatalf("a wrong expectation in a cluster: %v\n%s", err, out.String())
	}
}
