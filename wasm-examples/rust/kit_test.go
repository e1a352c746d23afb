package rustexamples_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// open loads a module as the plugin kit does (`wasmkube plugin test` and `conformance`),
// with a time limit of 1s instead of 100ms: the checks are about answers and memory, and
// the test machine is shared.
func open(t *testing.T, path string) *wasmtest.Plugin {
	t.Helper()
	ctx := context.Background()
	p, err := wasmtest.Open(ctx, path, wasmtest.Options{Timeout: time.Second, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(ctx) })
	return p
}

// cases runs the case file (relative to the repository root) on p.
func cases(t *testing.T, p *wasmtest.Plugin, file string) {
	t.Helper()
	f, err := wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), file))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Run(context.Background(), f) {
		if !r.Passed {
			t.Errorf("%s: %s: %s", file, r.Name, r.Diff)
		}
	}
}

// kit runs a scheduler example's case file, then every conformance check with args.
func kit(t *testing.T, path, file, args string) {
	t.Helper()
	p := open(t, path)
	cases(t, p, file)
	for _, r := range p.Conformance(context.Background(), wasmtest.ConformanceOptions{Args: []byte(args)}) {
		if !r.Passed && !r.Skipped {
			t.Errorf("%s: %s", r.Name, r.Diff)
		}
	}
}

func TestFewestPodsScoreKit(t *testing.T) {
	kit(t, wasmbuild.Script(t, "wasm-examples/rust/fewest-pods-score"), "wasm-examples/rust/fewest-pods-score/cases.yaml", `{"avoidPrefix": "spot-"}`)
}

// The admission and kubelet examples' case files (`wasmkube plugin test`).
func TestCaseFiles(t *testing.T) {
	for _, name := range []string{"require-labels", "default-labels", "tcp-probe"} {
		dir := "wasm-examples/rust/" + name
		cases(t, open(t, wasmbuild.Script(t, dir)), dir+"/cases.yaml")
	}
}
