package admitwasm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// The reload race through the real loader: the config is rewritten every 100 ms while
// every reload is slowed to 300 ms after each module it loads (a hook in the loader). A
// snapshot that the watch sees superseded during its build is never applied (checked
// deterministically once: a write during a build, waited for until the watch has seen
// it), the sets applied only move forward, and once the writes stop the last content is
// in force.
func TestReloadRaceAdmission(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	module := wasmbuild.WAT(t, "plugins/admitwasm/testdata/require-team.wat")
	config := func(seq int) string {
		return fmt.Sprintf("admission:\n  policies:\n  - name: v-%d\n    path: %s\n    %s\n", seq, module, podRule)
	}
	write := func(seq int) {
		tmp := file + ".tmp"
		if err := os.WriteFile(tmp, []byte(config(seq)), 0o600); err != nil {
			t.Error(err)
			return
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Error(err)
		}
	}
	seqOf := func(data []byte) int {
		s := string(data)
		i := strings.Index(s, "name: v-")
		n, _ := strconv.Atoi(strings.Fields(s[i+len("name: v-"):])[0])
		return n
	}
	write(0)

	var mu sync.Mutex
	var applied []int
	interleaved := false
	building := func(snap configwatch.Snapshot) {
		mu.Lock()
		first := !interleaved
		interleaved = true
		mu.Unlock()
		if !first {
			time.Sleep(300 * time.Millisecond)
			return
		}
		write(1000)
		deadline := time.Now().Add(10 * time.Second)
		for !snap.Superseded() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !snap.Superseded() {
			t.Error("the watch did not see a write made during a reload")
		}
	}
	onApply := func(snap configwatch.Snapshot) {
		mu.Lock()
		applied = append(applied, seqOf(snap.Data))
		mu.Unlock()
	}
	state := func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), applied...)
	}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pol, err := admitwasm.New(ctx, admitwasm.WithReloadHooks(admitwasm.Options{ConfigFile: file, Host: h}, building, onApply))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { pol.Run(ctx, nil); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(100 * time.Millisecond) // the watch is set up

	inForce := func(seq int) func() bool {
		return func() bool { return slices.Equal(pol.InForce(), []string{fmt.Sprintf("v-%d", seq)}) }
	}
	write(1)
	eventually(t, "the write made during a reload in force", inForce(1000))
	if a := state(); !slices.Equal(a, []int{1000}) {
		t.Fatalf("applied %v, want only [1000]: the snapshot superseded during its build was applied", a)
	}
	seq := 1000
	for range 20 {
		seq++
		write(seq)
		time.Sleep(100 * time.Millisecond)
	}
	eventually(t, "the last content in force", inForce(seq))
	time.Sleep(700 * time.Millisecond) // a stale reload still queued would show now
	if !inForce(seq)() {
		t.Fatalf("in force %v after the writes stopped, want v-%d", pol.InForce(), seq)
	}
	a := state()
	for i := 1; i < len(a); i++ {
		if a[i] <= a[i-1] {
			t.Fatalf("applied %v: v-%d after v-%d, an older set applied after a newer one", a, a[i], a[i-1])
		}
	}
	t.Logf("%d writes, applied %v", seq-1000+2, a)
}
