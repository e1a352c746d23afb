// Package csdk_test checks sdk/c/wasmkube.h against the real host: a module that imports
// every declared host function loads (so each declaration's signature is the host's) and
// its Filter runs through the scheduler adapter.
package csdk_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

func TestHeaderMatchesTheHost(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal("clang not found (install it: scripts/deps.sh)")
	}
	dir := filepath.Join(wasmbuild.Root(), "sdk", "c")
	out := filepath.Join(t.TempDir(), "allimports.wasm")
	cmd := exec.Command(clang, "--target=wasm32", "-nostdlib", "-O2", "-Wall", "-Wextra", "-Werror",
		"-Wl,--no-entry", "-I", dir, "-o", out, filepath.Join(dir, "testdata", "allimports.c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := schedwasm.NewLoader(h).Load(ctx, config.WasmPlugin{Spec: modulespec.Spec{Name: "all", Path: out}}, "")
	if err != nil {
		t.Fatalf("a module importing every host function of wasmkube.h: %v", err)
	}
	p, err := f(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*framework.NodeInfo
	for _, name := range []string{"a", "xb"} {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}})
		nodes = append(nodes, ni)
	}
	st := make([]*framework.Status, len(nodes))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"}}
	p.(framework.BatchFilterPlugin).FilterBatch(ctx, framework.NewCycleState(), pod, nodes, st)
	if st[0] != nil {
		t.Errorf("node a: %v, want it to pass", st[0].Message())
	}
	if st[1] == nil || st[1].Code() != framework.Unschedulable || st[1].Message() != "name starts with x" {
		t.Errorf("node xb: %v, want Unschedulable: name starts with x", st[1])
	}
}
