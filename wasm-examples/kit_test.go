// Package examples_test runs every example plugin through the plugin kit, as `wasmkube
// plugin test` and `wasmkube plugin conformance` do: each example folder must have a
// cases.yaml, its cases must pass, and it must pass every conformance check that applies.
package examples_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// build builds the example in dir (relative to the repository root) as make examples does.
func build(t *testing.T, dir string) string {
	t.Helper()
	switch {
	case strings.HasPrefix(dir, "wasm-examples/go/"):
		return wasmbuild.Go(t, dir)
	case strings.HasPrefix(dir, "wasm-examples/wat/"):
		return wasmbuild.WAT(t, filepath.Join(dir, filepath.Base(dir)+".wat"))
	}
	return wasmbuild.Script(t, dir)
}

func TestEveryExamplePassesTheKit(t *testing.T) {
	root := wasmbuild.Root()
	dirs, err := filepath.Glob(filepath.Join(root, "wasm-examples", "*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, abs := range dirs {
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() || filepath.Base(abs) == "node_modules" {
			continue
		}
		dir, _ := filepath.Rel(root, abs)
		_, hasMain := os.Stat(filepath.Join(abs, "main.go"))
		_, hasWAT := os.Stat(filepath.Join(abs, filepath.Base(abs)+".wat"))
		_, hasScript := os.Stat(filepath.Join(abs, "build.sh"))
		if hasMain != nil && hasWAT != nil && hasScript != nil {
			continue // not an example plugin
		}
		n++
		t.Run(dir, func(t *testing.T) {
			f, err := wasmtest.LoadFile(filepath.Join(abs, "cases.yaml"))
			if err != nil {
				t.Fatalf("every example has a cases.yaml for `wasmkube plugin test`: %v", err)
			}
			ctx := context.Background()
			// 1 s per call instead of 100 ms: the checks are about answers and memory, and
			// the test machine is shared.
			p, err := wasmtest.Open(ctx, build(t, dir), wasmtest.Options{Timeout: time.Second, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			rs := append(p.Run(ctx, f), p.Conformance(ctx, wasmtest.ConformanceOptions{Args: f.Args})...)
			for _, r := range rs {
				if !r.Passed && !r.Skipped {
					t.Errorf("%s: %s", r.Name, strings.Join(r.Diff, "; "))
				}
			}
		})
	}
	if n < 10 {
		t.Fatalf("found %d example plugins, want all of wasm-examples", n)
	}
}
