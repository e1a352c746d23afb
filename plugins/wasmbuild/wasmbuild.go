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

// build runs the build cmd makes (writing to its argument, a temporary file) once per
// key and test binary, and returns where the module was installed. The output goes to one
// folder reused by every test run, so builds do not pile up in /tmp, and is moved into
// place atomically: test binaries of several packages may build the same module at the
// same time. what describes the failure for t.Fatalf.
func build(t testing.TB, key, what string, cmd func(tmp string) *exec.Cmd) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[key]; ok {
		return p
	}
	d := filepath.Join(os.TempDir(), "wasmkube-wasmbuild")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(d, strings.ReplaceAll(key, "/", "_")+".wasm")
	tmp := fmt.Sprintf("%s.%d.tmp", out, os.Getpid())
	if b, err := cmd(tmp).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	built[key] = out
	return out
}

// Go builds the Go guest in pkgDir (relative to the repository root) with
// GOOS=wasip1 GOARCH=wasm -buildmode=c-shared and returns the module's bytes' path. Builds
// are cached per test binary; Go's build cache makes rebuilds cheap.
func Go(t testing.TB, pkgDir string) string {
	t.Helper()
	return build(t, pkgDir, "build "+pkgDir+" for wasip1", func(tmp string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-buildmode=c-shared", "-o", tmp, "./"+pkgDir)
		cmd.Dir = Root()
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		return cmd
	})
}

// WAT compiles a WAT file (relative to the repository root) with wat2wasm.
func WAT(t testing.TB, file string) string {
	t.Helper()
	return build(t, file, "wat2wasm "+file+" (install wabt: scripts/deps.sh)", func(tmp string) *exec.Cmd {
		return exec.Command("wat2wasm", "-o", tmp, filepath.Join(Root(), file))
	})
}

// Script builds the example in dir (relative to the repository root) with its own
// build.sh, the way scripts/build-examples.sh builds examples in languages other than Go
// and WAT: `bash build.sh OUT` run from dir, writing the module to OUT. It returns OUT.
func Script(t testing.TB, dir string) string {
	t.Helper()
	return build(t, dir, "build "+dir+" with its build.sh (toolchains: scripts/deps.sh)", func(tmp string) *exec.Cmd {
		cmd := exec.Command("bash", "build.sh", tmp)
		cmd.Dir = filepath.Join(Root(), dir)
		return cmd
	})
}
