package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGangOutcome(t *testing.T) {
	at := time.Now()
	b := make([]time.Time, 12) // three groups of 4
	for _, i := range []int{0, 1, 2, 3, 5} {
		b[i] = at
	}
	if w, p, n := gangOutcome(b, 4); w != 1 || p != 1 || n != 1 {
		t.Fatalf("whole %d, partial %d, none %d; want 1, 1, 1", w, p, n)
	}
}

// TestWithBatching: --batching sets every profile of the config (adding the default one
// when there is none), in a file beside the original so that relative module paths hold.
func TestWithBatching(t *testing.T) {
	dir := t.TempDir()
	orig := filepath.Join(dir, "sched.yaml")
	data := []byte("scheduler:\n  wasmPlugins: [{name: w, path: w.wasm}]\n  profiles:\n  - schedulerName: a\n  - schedulerName: b\n    batching: true\n")
	if err := os.WriteFile(orig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	file, out, remove, err := withBatching(orig, data, false)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(file) != dir || strings.Count(string(out), "batching: false") != 2 || !strings.Contains(string(out), "path: w.wasm") {
		t.Fatalf("file %s:\n%s", file, out)
	}
	remove()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("%s not removed: %v", file, err)
	}
	_, out, _, err = withBatching("", nil, true)
	if err != nil || !strings.Contains(string(out), "schedulerName: default-scheduler") || !strings.Contains(string(out), "batching: true") {
		t.Fatalf("no config: %v\n%s", err, out)
	}
}
