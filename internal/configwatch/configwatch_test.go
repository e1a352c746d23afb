package configwatch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
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
		Reload: func(snap Snapshot) error {
			inForce = string(snap.Data)
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

// component is what a reloading component does with a snapshot: build (slowed by the
// test), then, under its lock, apply unless superseded. It records what it applied.
type component struct {
	mu      sync.Mutex
	inForce string
	applied []int // the sequence numbers of the contents applied, in order
}

func (c *component) unchanged(data []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(data) == c.inForce
}

func (c *component) reload(snap Snapshot) error {
	snap.Building() // the slow part of a reload: compiling, smoke calls
	c.mu.Lock()
	defer c.mu.Unlock()
	if snap.Superseded() {
		return ErrSuperseded
	}
	seq, err := strconv.Atoi(string(snap.Data))
	if err != nil {
		return err
	}
	c.inForce = string(snap.Data)
	c.applied = append(c.applied, seq)
	return nil
}

func (c *component) state() (string, []int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inForce, append([]int(nil), c.applied...)
}

func writeByRename(t *testing.T, path, s string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Error(err)
	}
}

// The reload race: the file is rewritten every 100 ms while every reload is slowed to
// 350 ms. No superseded snapshot is ever applied (a reload whose file changed while it
// built is discarded, checked deterministically by writing during a build and waiting
// until the watch has seen it), what is applied only moves forward, and once the writes
// stop the last content is in force.
func TestReloadRaceLastContentWins(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	writeByRename(t, file, "0")
	c := &component{inForce: "0"}

	var hookMu sync.Mutex
	interleave := true // the first slowed reload is superseded on purpose
	var seq int
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Run(ctx, Options{What: "test", File: file, Debounce: 20 * time.Millisecond,
			Modules:   func() []string { return nil },
			Unchanged: c.unchanged,
			Reload:    c.reload,
			BuildHook: func(snap Snapshot) {
				hookMu.Lock()
				first := interleave
				interleave = false
				hookMu.Unlock()
				if first {
					// Write while this snapshot builds, and wait until the watch has seen
					// it: this snapshot must then be discarded.
					writeByRename(t, file, "1000")
					deadline := time.Now().Add(10 * time.Second)
					for !snap.Superseded() && time.Now().Before(deadline) {
						time.Sleep(5 * time.Millisecond)
					}
					if !snap.Superseded() {
						t.Error("the watch did not see a write made during a reload")
					}
					return
				}
				time.Sleep(350 * time.Millisecond)
			}})
	}()
	time.Sleep(100 * time.Millisecond) // the watch is set up

	writeByRename(t, file, "1")
	waitFor(t, "the write during a reload to win", func() bool { in, _ := c.state(); return in == "1000" })
	if _, applied := c.state(); len(applied) != 1 || applied[0] != 1000 {
		t.Fatalf("applied %v, want only [1000]: the snapshot superseded during its build was applied", applied)
	}

	seq = 1000
	for range 25 {
		seq++
		writeByRename(t, file, fmt.Sprint(seq))
		time.Sleep(100 * time.Millisecond)
	}
	last := fmt.Sprint(seq)
	waitFor(t, "the last content in force", func() bool { in, _ := c.state(); return in == last })
	// Nothing after the last content: no stale reload is still queued.
	time.Sleep(500 * time.Millisecond)
	in, applied := c.state()
	if in != last {
		t.Fatalf("in force %q after the writes stopped, want the last content %q (applied %v)", in, last, applied)
	}
	for i := 1; i < len(applied); i++ {
		if applied[i] <= applied[i-1] {
			t.Fatalf("applied %v: content %d after %d, an older snapshot applied after a newer one", applied, applied[i], applied[i-1])
		}
	}
	t.Logf("%d writes, %d applied: %v", seq-1000+2, len(applied), applied)
	cancel()
	<-done
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
