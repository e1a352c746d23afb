// Package wasmbuild builds wasm modules for tests: Go guests with the wasip1 toolchain and
// WAT files with wat2wasm (Debian's wabt, installed by scripts/deps.sh).
package wasmbuild

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var (
	mu    sync.Mutex
	built = map[string]string{}
)

// Root is the repository root.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// outDir is one folder reused by every test run, so builds do not pile up in /tmp.
func outDir(t testing.TB) string {
	d := filepath.Join(os.TempDir(), "wasmkube-wasmbuild")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// install moves a finished build into place atomically: test binaries of several
// packages may build the same module at the same time.
func install(t testing.TB, tmp, out string) {
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
}

// Go builds the Go guest in pkgDir (relative to the repository root) with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and returns the module's bytes' path. Builds
// are cached per test binary; Go's build cache makes rebuilds cheap.
func Go(t testing.TB, pkgDir string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[pkgDir]; ok {
		return p
	}
	out := filepath.Join(outDir(t), strings.ReplaceAll(pkgDir, "/", "_")+".wasm")
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(goBin, "build", "-buildmode=c-shared", "-o", tmp, "./"+pkgDir)
	cmd.Dir = Root()
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s for wasip1: %v\n%s", pkgDir, err, b)
	}
	install(t, tmp, out)
	built[pkgDir] = out
	return out
}

// WAT compiles a WAT file (relative to the repository root) with wat2wasm.
func WAT(t testing.TB, file string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[file]; ok {
		return p
	}
	out := filepath.Join(outDir(t), strings.ReplaceAll(file, "/", "_")+".wasm")
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	cmd := exec.Command("wat2wasm", "-o", tmp, filepath.Join(Root(), file))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm %s (install wabt: scripts/deps.sh): %v\n%s", file, err, b)
	}
	install(t, tmp, out)
	built[file] = out
	return out
}

// Script builds the example in dir (relative to the repository root) with its own
// build.sh, the way scripts/build-examples.sh builds examples in languages other than Go
// and WAT: `bash build.sh OUT` run from dir, writing the module to OUT. It returns OUT.
func Script(t testing.TB, dir string) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[dir]; ok {
		return p
	}
	out := filepath.Join(outDir(t), strings.ReplaceAll(dir, "/", "_")+".wasm")
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	cmd := exec.Command("bash", "build.sh", tmp)
	cmd.Dir = filepath.Join(Root(), dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s with its build.sh (toolchains: scripts/deps.sh): %v\n%s", dir, err, b)
	}
	install(t, tmp, out)
	built[dir] = out
	return out
}
