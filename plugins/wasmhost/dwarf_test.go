package wasmhost

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A module with DWARF sections (clang -g; Rust's std ships megabytes of it) must not make
// traps expensive: wazero would symbolize every trap's stack trace from the DWARF (about
// 300ms per trap for a Rust std module, long enough to be misreported as a timeout), and
// the host keeps only the trace's first line anyway. So the raw trap carries no source
// positions.
func TestTrapsAreNotSymbolizedFromDWARF(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal("clang not found (install it: scripts/deps.sh)")
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "dwarfguest.c"), filepath.Join(dir, "dwarfguest.wasm")
	code := `__attribute__((export_name("wasmkube_abi_version"))) int v(void) { return 1; }
__attribute__((export_name("wasmkube_filter"))) int f(int n) {
	if (n > 1)
		__builtin_trap();
	return 0;
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(clang, "--target=wasm32", "-nostdlib", "-g", "-O0", "-Wl,--no-entry", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	h, _ := newHost(t)
	m, err := h.Load(context.Background(), LoadOptions{Name: "dwarf", Path: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	p, err := m.NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := p.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	inst.call = newCall(Filter, testPod("p", nil), testNodes("n0", "n1"))
	stack := inst.stack[:]
	stack[0] = 2
	err, _ = inst.run(context.Background(), inst.fns[Filter], stack, time.Minute)
	if err == nil {
		t.Fatal("the guest did not trap")
	}
	if strings.Contains(err.Error(), "dwarfguest.c") {
		t.Errorf("the trap was symbolized from DWARF:\n%v", err)
	}
}
