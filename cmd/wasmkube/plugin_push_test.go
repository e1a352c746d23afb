package main

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

// `plugin push` prints REF@sha256:<manifest digest>, a reference the module is pulled by;
// a file that is no module is refused before anything is sent.
func TestPluginPushPrintsReferenceByDigest(t *testing.T) {
	h, err := wasmoci.NewRegistry(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(h)
	defer reg.Close()
	ref := strings.TrimPrefix(reg.URL, "http://") + "/policies/drain:v1"
	file := wasmbuild.WAT(t, "wasm-examples/wat/drain-filter/drain-filter.wat")
	out, err := runCLI(t, "plugin", "push", file, ref)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := strings.TrimSpace(out)
	if !strings.HasPrefix(got, ref+"@sha256:") || len(got) != len(ref)+len("@sha256:")+64 {
		t.Fatalf("push printed %q", out)
	}
	s, err := wasmoci.Open(wasmoci.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Pull(context.Background(), got, wasmoci.PullIfNotPresent)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(file)
	if string(m.Wasm) != string(want) || m.Layout != wasmoci.LayoutCNCF {
		t.Fatalf("pulled %d bytes in layout %s", len(m.Wasm), m.Layout)
	}
	if out, err := runCLI(t, "plugin", "push", "/etc/hostname", ref); err == nil || !strings.Contains(err.Error(), "no \\0asm header") {
		t.Fatalf("pushing a non-module: %v\n%s", err, out)
	}
}
