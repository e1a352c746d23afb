// Package assdk_test checks sdk/assemblyscript against the real host: a module that calls
// every binding (testdata/allimports.ts) imports every host function of ABI v1, with the
// host's signature, and nothing else; it exports an entry point of every kind; and its
// init echoes args through the SDK's JSON parser.
package assdk_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

func TestBindingsMatchTheHost(t *testing.T) {
	ctx := context.Background()
	path := wasmbuild.Script(t, "sdk/assemblyscript/testdata/allimports")
	exts := []wasmhost.Extension{schedwasm.Extension, admitwasm.Extension, nodewasm.Extension}
	h, err := wasmhost.New(wasmhost.Options{Extensions: exts, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Load(ctx, wasmhost.LoadOptions{Name: "all", Path: path, Capabilities: []string{admitwasm.CapabilityObjects, nodewasm.NetworkCapability}})
	if err != nil {
		t.Fatalf("a module importing every host function through sdk/assemblyscript: %v", err)
	}
	defer m.Close(ctx)
	for _, e := range exts {
		for _, k := range e.Kinds {
			if !m.Kinds().Has(k) {
				t.Errorf("kind %s: its entry point was not detected", k)
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
		mod, name, _ := f.Import()
		if mod != "wasmkube" {
			t.Errorf("imports %s.%s: only wasmkube imports are allowed", mod, name)
		}
		imported = append(imported, name)
	}
	want := []string{"args", "status_reason", "log"}
	for _, e := range exts {
		for _, f := range e.Funcs {
			want = append(want, f.Name)
		}
	}
	for _, name := range want {
		if !slices.Contains(imported, name) {
			t.Errorf("host function %s: no binding of sdk/assemblyscript imports it", name)
		}
	}

	// parseJSON, through the init's rejection reason.
	for args, echo := range map[string]string{
		`{"a": [1, -2.5e1, true, null, "x\"y\u00e9"], "b": {}}`: `{a:[1.0,-25.0,true,null,<x"yé>],b:{}}`,
		`[]`:   `[]`,
		`"\n"`: "<\n>",
	} {
		_, err := m.NewPool(ctx, []byte(args), 1)
		if err == nil || !strings.Contains(err.Error(), echo) {
			t.Errorf("args %s: %v, want the parsed value %s in the init's reason", args, err, echo)
		}
	}
}
