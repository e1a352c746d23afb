package csdk_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// The kubelet declarations of wasmkube.h match the host: a module importing each of them
// loads as the kubelet loads hook plugins and runs.
func TestKubeletHeaderMatchesTheHost(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal("clang not found (install it: scripts/deps.sh)")
	}
	dir := filepath.Join(wasmbuild.Root(), "sdk", "c")
	out := filepath.Join(t.TempDir(), "kubelet.wasm")
	cmd := exec.Command(clang, "--target=wasm32", "-nostdlib", "-O2", "-Wall", "-Wextra", "-Werror", "-mbulk-memory",
		"-Wl,--no-entry", "-I", dir, "-o", out, filepath.Join(dir, "testdata", "kubelet.c"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	p := nodewasmtest.Load(t, out, "")
	if r := p.Probe(t, "liveness", time.Second); r.Code != 2 || r.Reason != "app liveness 127.0.0.1 ECONNREFUSED" {
		t.Errorf("probe: code %d reason %q err %v, want 2 %q", r.Code, r.Reason, r.Err, "app liveness 127.0.0.1 ECONNREFUSED")
	}
	if r := p.PreStop(t, time.Second); r.Code != 0 || r.Err != nil {
		t.Errorf("prestop: code %d reason %q err %v, want 0", r.Code, r.Reason, r.Err)
	}
}
