package configwatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A changed file reloads; a write that changes nothing does not; a rewritten module does,
// even with the same config bytes; the config is read from where a rename put it.
func TestReloadsOnChange(t *testing.T) {
	dir := t.TempDir()
	file, mod := filepath.Join(dir, "wasmkube.yaml"), filepath.Join(dir, "mods", "p.wasm")
	if err := os.MkdirAll(filepath.Dir(mod), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil { // as editors and ConfigMap mounts do
			t.Fatal(err)
		}
	}
	write(file, "a")
	write(mod, "wasm")
	inForce := "a"
	reloads := make(chan string, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Run(ctx, Options{What: "test", File: file, Debounce: 20 * time.Millisecond,
		Modules:   func() []string { return []string{"mods/p.wasm"} },
		Unchanged: func(data []byte) bool { return string(data) == inForce },
		Reload: func(data []byte) error {
			inForce = string(data)
			reloads <- inForce
			return nil
		}})
	next := func(what string) string {
		t.Helper()
		select {
		case r := <-reloads:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no reload", what)
		}
		return ""
	}
	time.Sleep(100 * time.Millisecond) // the watch is set up
	write(file, "b")
	if got := next("changed file"); got != "b" {
		t.Fatalf("reloaded %q, want b", got)
	}
	write(file, "b")
	write(mod, "wasm v2")
	if got := next("rewritten module"); got != "b" {
		t.Fatalf("reloaded %q after the module changed, want the same config b", got)
	}
	select {
	case r := <-reloads:
		t.Fatalf("an extra reload (%q): the unchanged write of b should not reload", r)
	case <-time.After(200 * time.Millisecond):
	}
}
