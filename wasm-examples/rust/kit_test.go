package rustexamples_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// kit runs a scheduler example through the plugin kit as `wasmkube plugin test` and
// `wasmkube plugin conformance` do: its cases.yaml, then every conformance check with args.
// The time limit is 1s instead of 100ms: the checks are about answers and memory, and the
// test machine is shared.
func kit(t *testing.T, path, cases, args string) {
	t.Helper()
	ctx := context.Background()
	p, err := wasmtest.Open(ctx, path, wasmtest.Options{Timeout: time.Second, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	f, err := wasmtest.LoadFile(filepath.Join(wasmbuild.Root(), cases))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(p.Run(ctx, f), p.Conformance(ctx, wasmtest.ConformanceOptions{Args: []byte(args)})...) {
		if !r.Passed && !r.Skipped {
			t.Errorf("%s: %s", r.Name, r.Diff)
		}
	}
}

func TestFewestPodsScoreKit(t *testing.T) {
	kit(t, wasmbuild.Script(t, "wasm-examples/rust/fewest-pods-score"), "wasm-examples/rust/fewest-pods-score/cases.yaml", `{"avoidPrefix": "spot-"}`)
}
