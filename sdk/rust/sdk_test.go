// Package rustsdk_test checks sdk/rust against the real host: a module that calls every
// wrapper (testdata/allimports) imports every host function of ABI v1 with the host's
// signature and exports an entry point of every kind; and the crate's own unit tests
// (JSON reader, buffer rule, records) pass natively.
package rustsdk_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// hostFuncs are the names of every host function of ABI v1: the extensions' and the
// core's (args, status_reason, log).
func hostFuncs(exts []wasmhost.Extension) []string {
	names := []string{"args", "status_reason", "log"}
	for _, e := range exts {
		for _, f := range e.Funcs {
			if !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
	}
	return names
}

func TestBindingsMatchTheHost(t *testing.T) {
	ctx := context.Background()
	path := wasmbuild.Script(t, "sdk/rust/testdata/allimports")
	exts := []wasmhost.Extension{schedwasm.Extension, admitwasm.Extension, nodewasm.Extension}
	h, err := wasmhost.New(wasmhost.Options{Extensions: exts, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "all", Path: path, Capabilities: []string{admitwasm.CapabilityObjects, nodewasm.NetworkCapability}})
	if err != nil {
		t.Fatalf("a module importing every host function through sdk/rust: %v", err)
	}
	defer m.Close(ctx)
	for _, e := range exts {
		for _, k := range e.Kinds {
			if !m.Kinds().Has(k) {
				t.Errorf("kind %s: the export macro's entry point was not detected", k)
			}
		}
	}
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
	var imported []string
	for _, f := range cm.ImportedFunctions() {
		_, name, _ := f.Import()
		imported = append(imported, name)
	}
	for _, name := range hostFuncs(exts) {
		if !slices.Contains(imported, name) {
			t.Errorf("host function %s: no wrapper of sdk/rust imports it", name)
		}
	}
}

func TestCrateUnitTests(t *testing.T) {
	cmd := exec.Command("/usr/bin/cargo", "test", "--offline", "--quiet", "--no-default-features")
	cmd.Dir = filepath.Join(wasmbuild.Root(), "sdk", "rust")
	cmd.Env = append(os.Environ(), "RUSTC=/usr/bin/rustc")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cargo test (Debian's cargo and rustc: scripts/deps.sh): %v\n%s", err, b)
	}
}
