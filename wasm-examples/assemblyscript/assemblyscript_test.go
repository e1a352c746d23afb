// Package asexamples_test runs the AssemblyScript example plugins (built by their
// build.sh with the asc that scripts/deps.sh installs, on the SDK in sdk/assemblyscript)
// through the real wasm host and scheduler adapter.
package asexamples_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// importsOnlyWasmkube fails t unless every import of the module at path comes from the
// wasmkube module: AssemblyScript's standard library imports env.abort, env.trace and
// env.seed unless the SDK's asconfig.json replaces them.
func importsOnlyWasmkube(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := wazero.NewRuntime(ctx)
	defer r.Close(ctx)
	cm, err := r.CompileModule(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range cm.ImportedFunctions() {
		if mod, name, _ := f.Import(); mod != "wasmkube" {
			t.Errorf("%s imports %s.%s: only wasmkube imports are allowed", path, mod, name)
		}
	}
	if len(cm.ImportedMemories()) != 0 {
		t.Errorf("%s imports its memory", path)
	}
	if _, ok := cm.ExportedFunctions()["_initialize"]; !ok {
		t.Errorf("%s does not export _initialize: its top-level code would need a start section", path)
	}
}

func TestZoneFilterThroughTheHost(t *testing.T) {
	ctx := context.Background()
	path := wasmbuild.Script(t, "wasm-examples/assemblyscript/zone-filter")
	importsOnlyWasmkube(t, path)
	f := schedwasmtest.Load(t, "zone", path)
	for _, bad := range []string{``, `{"zones": []}`, `{"zones": [1]}`} {
		if _, err := f(ctx, json.RawMessage(bad), nil); err == nil || !strings.Contains(err.Error(), "args.zones") {
			t.Errorf("args %q: err = %v, want the init's rejection naming args.zones", bad, err)
		}
	}
	p, err := f(ctx, json.RawMessage(`{"zones": ["zone-1", " zone-2 "]}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*framework.NodeInfo
	for _, zone := range []string{"zone-1", "zone-2", "zone-3", ""} {
		ni := framework.NewNodeInfo()
		labels := map[string]string{}
		if zone != "" {
			labels["topology.kubernetes.io/zone"] = zone
		}
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n-" + zone, Labels: labels}})
		nodes = append(nodes, ni)
	}
	// The verdicts of the Go zone-filter (wasm-examples/go/zone-filter).
	tests := []struct {
		annotation string
		pass       []bool
	}{
		{"", []bool{true, true, false, false}},
		{"zone-3", []bool{false, false, true, false}},
		{"zone-1,zone-3", []bool{true, false, true, false}},
	}
	for _, tt := range tests {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		if tt.annotation != "" {
			pod.Annotations = map[string]string{"wasmkube.io/zone": tt.annotation}
		}
		st := make([]*framework.Status, len(nodes))
		p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod, nodes, st)
		for i, n := range nodes {
			if got := st[i] == nil; got != tt.pass[i] {
				t.Errorf("annotation %q, node %s: passed=%v (%v), want %v", tt.annotation, n.Node().Name, got, st[i].Message(), tt.pass[i])
			}
			if st[i] != nil && st[i].Code() != framework.UnschedulableAndUnresolvable {
				t.Errorf("annotation %q, node %s: code %v, want UnschedulableAndUnresolvable", tt.annotation, n.Node().Name, st[i].Code())
			}
		}
	}
	st := make([]*framework.Status, len(nodes))
	p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}, nodes, st)
	if want := "node's zone zone-3 is not allowed"; st[2] == nil || st[2].Message() != want {
		t.Errorf("node n-zone-3: %v, want %q", st[2].Message(), want)
	}
	if want := "node has no topology.kubernetes.io/zone label"; st[3] == nil || st[3].Message() != want {
		t.Errorf("node n-: %v, want %q", st[3].Message(), want)
	}
}
