package main

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The second variant of a bench policy's module differs only by a custom section: another
// digest, a module that still loads with the same entry points.
func TestWithCustomSectionLoads(t *testing.T) {
	wasm, err := os.ReadFile(wasmbuild.WAT(t, "plugins/wasmpolicy/testdata/say-no.wat"))
	if err != nil {
		t.Fatal(err)
	}
	v2 := withCustomSection(wasm, "wasmkube-bench", []byte("v2"))
	if bytes.Equal(v2, wasm) || !bytes.HasPrefix(v2, wasm) {
		t.Fatal("the variant must be the module with a section appended")
	}
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close(context.Background())
	for name, b := range map[string][]byte{"v1": wasm, "v2": v2} {
		m, err := host.Load(context.Background(), wasmhost.LoadOptions{Name: name, Path: name + ".wasm", Wasm: b})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := m.Kinds(); len(got) != 1 {
			t.Errorf("%s: entry points %v, want the probe alone", name, got)
		}
		m.Close(context.Background())
	}
	if q := quantile([]float64{5, 1, 4, 2, 3}, 0.5); q != 3 {
		t.Errorf("median %v, want 3", q)
	}
}
