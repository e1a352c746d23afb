package wasmhost_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newHost(t *testing.T) (*wasmhost.Host, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	return h, logs
}

func load(t *testing.T, h *wasmhost.Host, name, wat string, o wasmhost.LoadOptions) *wasmhost.Module {
	t.Helper()
	o.Name, o.Path = name, wasmbuild.WAT(t, "plugins/testdata/"+wat)
	m, err := h.Load(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func testPod(name string, labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("1Gi"),
		}}}}},
	}
}

func testNodes(names ...string) []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range names {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110"),
		}}})
		out = append(out, ni)
	}
	return out
}

func newCall(kind *wasmhost.Kind, pod *v1.Pod, nodes []*framework.NodeInfo) *schedwasm.Call {
	return &schedwasm.Call{Kind: kind, Pod: pod, Nodes: nodes, Scores: make([]int64, len(nodes)), State: framework.NewCycleState()}
}

// Each misbehaving plugin misbehaves only for a pod labelled "bad". The bad call must fail
// with the documented reason, be counted, and leave the pool able to serve the next call.
func TestMisbehavingPluginsAreContained(t *testing.T) {
	bad := testPod("p", map[string]string{"bad": ""})
	good := testPod("p", nil)
	tests := []struct {
		wat         string
		kind        *wasmhost.Kind
		opts        wasmhost.LoadOptions
		want        wasmhost.FailureReason
		wantMessage string
		discarded   bool
	}{
		{"loop.wat", schedwasm.Filter, wasmhost.LoadOptions{Timeout: 50 * time.Millisecond}, wasmhost.ReasonTimeout, "time limit of 50ms", true},
		// 16 GiB of memory.fill takes some hundreds of milliseconds (1 GiB took 20-40 ms on
		// this machine): past 100ms. The limit also bounds each instance's start calls, so it
		// stays well above what a busy machine's scheduling delay can add to a trivial call.
		{"overrun.wat", schedwasm.Filter, wasmhost.LoadOptions{Timeout: 100 * time.Millisecond}, wasmhost.ReasonTimeout, "time limit of 100ms", true},
		{"overrun-start.wat", schedwasm.Filter, wasmhost.LoadOptions{Timeout: 100 * time.Millisecond}, wasmhost.ReasonTimeout, "time limit of 100ms", true},
		{"trap.wat", schedwasm.Filter, wasmhost.LoadOptions{}, wasmhost.ReasonTrap, "unreachable", true},
		{"grow.wat", schedwasm.Filter, wasmhost.LoadOptions{MemoryLimit: 2 << 20}, wasmhost.ReasonMemory, "memory limit of 2097152 bytes", true},
		{"growbig.wat", schedwasm.Filter, wasmhost.LoadOptions{MemoryLimit: 16 << 20, Timeout: time.Minute}, wasmhost.ReasonMemory, "memory limit of 16777216 bytes", true},
		{"garbage.wat", schedwasm.Filter, wasmhost.LoadOptions{}, wasmhost.ReasonGarbage, "returned status code 42", false},
		{"garbage.wat", schedwasm.Score, wasmhost.LoadOptions{}, wasmhost.ReasonGarbage, "score 1000 for node n0 is outside [0, 100]", false},
		{"badindex.wat", schedwasm.Filter, wasmhost.LoadOptions{}, wasmhost.ReasonGarbage, "node index 99 is outside the batch of 2", false},
		{"badptr.wat", schedwasm.Filter, wasmhost.LoadOptions{}, wasmhost.ReasonBadPointer, "node_label: range [0xfffffff0, +100) is outside guest memory", true},
		{"exit.wat", schedwasm.Filter, wasmhost.LoadOptions{}, wasmhost.ReasonExit, "exit_code(3)", true},
	}
	for _, tt := range tests {
		t.Run(tt.wat+"/"+tt.kind.String(), func(t *testing.T) {
			h, _ := newHost(t)
			name := "misbehave-" + strings.TrimSuffix(tt.wat, ".wat") + "-" + tt.kind.String()
			m := load(t, h, name, tt.wat, tt.opts)
			p, err := m.NewPool(context.Background(), nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			before := failures(h, name, tt.kind.String())
			err = newCall(tt.kind, bad, testNodes("n0", "n1")).Do(context.Background(), p)
			var ce *wasmhost.CallError
			if !errors.As(err, &ce) {
				t.Fatalf("bad call: got %v, want a *wasmhost.CallError", err)
			}
			if ce.Reason != tt.want || ce.Plugin != name || ce.Kind != tt.kind {
				t.Fatalf("bad call: got %s/%s/%s, want %s/%s/%s (%v)", ce.Plugin, ce.Kind, ce.Reason, name, tt.kind, tt.want, err)
			}
			if !strings.Contains(err.Error(), tt.wantMessage) {
				t.Errorf("error %q does not contain %q", err, tt.wantMessage)
			}
			if got := failures(h, name, tt.kind.String()); got != before+1 {
				t.Errorf("failures metric: got %v, want %v", got, before+1)
			}
			// The pool has one slot: the next call is served by the same instance or, after
			// a discard, by a fresh one.
			c := newCall(tt.kind, good, testNodes("n0", "n1"))
			if err := c.Do(context.Background(), p); err != nil {
				t.Fatalf("good call after the bad one: %v", err)
			}
			created, discarded := p.Stats()
			wantCreated, wantDiscarded := int64(1), int64(0)
			if tt.discarded {
				wantCreated, wantDiscarded = 2, 1
			}
			if created != wantCreated || discarded != wantDiscarded {
				t.Errorf("instances created/discarded: got %d/%d, want %d/%d", created, discarded, wantCreated, wantDiscarded)
			}
		})
	}
}

// A pointer range that starts inside memory but ends past it is refused too, before the
// host writes anything.
func TestBadWriteBufferIsRefused(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "badptr-write", "badptr.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = newCall(schedwasm.Score, testPod("p", nil), testNodes("n0")).Do(context.Background(), p)
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonBadPointer || !strings.Contains(err.Error(), "node_name: range [0xffff, +2)") {
		t.Fatalf("got %v, want a bad pointer error from node_name", err)
	}
}

func TestLoadRejectsModulesOutsideTheABI(t *testing.T) {
	notWasm := filepath.Join(t.TempDir(), "plugin.wasm")
	if err := os.WriteFile(notWasm, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		opts       wasmhost.LoadOptions
		want       string
	}{
		{"v2", "plugins/testdata/v2.wat", wasmhost.LoadOptions{}, "exports wasmkube_abi_version 2, this host supports 1"},
		{"noversion", "plugins/testdata/noversion.wat", wasmhost.LoadOptions{}, "does not export wasmkube_abi_version: not a wasmkube plugin"},
		{"badimport", "plugins/testdata/badimport.wat", wasmhost.LoadOptions{}, `imports env.open_socket: plugins may import only from "wasmkube" and "wasi_snapshot_preview1"`},
		{"badsig", "plugins/testdata/badsig.wat", wasmhost.LoadOptions{}, "export wasmkube_score has signature () -> (i32), ABI v1 requires (i32) -> (i32)"},
		{"bigmem", "plugins/testdata/bigmem.wat", wasmhost.LoadOptions{}, "min 2048 pages (128 Mi) over limit of 1024 pages (64 Mi)"},
		{"missing", "", wasmhost.LoadOptions{Path: "/nonexistent/plugin.wasm"}, "plugin missing: /nonexistent/plugin.wasm: open /nonexistent/plugin.wasm: no such file or directory"},
		{"notwasm", "", wasmhost.LoadOptions{Path: notWasm}, "not a WebAssembly module"},
	}
	h, _ := newHost(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Name = tt.name
			if tt.path != "" {
				o.Path = wasmbuild.WAT(t, tt.path)
			}
			_, err := h.Load(context.Background(), o)
			var le *wasmhost.LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *wasmhost.LoadError", err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "plugin "+tt.name+": ") {
				t.Fatalf("error %q: want prefix %q and %q", err, "plugin "+tt.name+": ", tt.want)
			}
			if tt.name == "v2" && !errors.Is(err, wasmhost.ErrABIVersion) {
				t.Errorf("error %v does not wrap wasmhost.ErrABIVersion", err)
			}
		})
	}
}

func TestInitSeesArgsAndCanRejectThem(t *testing.T) {
	h, _ := newHost(t)
	m := load(t, h, "init", "init-reject.wat", wasmhost.LoadOptions{})
	_, err := m.NewPool(context.Background(), nil, 2)
	if err == nil || !strings.Contains(err.Error(), "wasmkube_init rejected the plugin (code 1): args: a non-empty object is required") {
		t.Fatalf("no args: got %v, want the plugin's rejection", err)
	}
	if _, err := m.NewPool(context.Background(), []byte(`{"zones":["a"]}`), 2); err != nil {
		t.Fatalf("with args: %v", err)
	}
}

// Cycle state is host-managed: what schedwasm.PreFilter stored is what any instance's schedwasm.Filter reads.
func TestCycleStateIsSharedByInstances(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "stateful", "stateful.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 4)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := testPod("n1", nil)
	state := framework.NewCycleState()
	if err := (&schedwasm.Call{Kind: schedwasm.PreFilter, Pod: pod, State: state}).Do(ctx, p); err != nil {
		t.Fatal(err)
	}
	// Run schedwasm.Filter batches in parallel so that several instances serve them.
	var wg sync.WaitGroup
	results := make([][]schedwasm.Verdict, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: pod, State: state, Nodes: testNodes("n0", "n1", "n2")}
			if err := c.Do(ctx, p); err != nil {
				t.Error(err)
				return
			}
			results[i] = c.Verdicts
		}()
	}
	wg.Wait()
	for i, vs := range results {
		if len(vs) != 2 || vs[0].Index != 0 || vs[1].Index != 2 || vs[0].Reason != "state mismatch" || vs[0].Code != schedwasm.CodeUnschedulable {
			t.Errorf("batch %d: verdicts %+v, want nodes 0 and 2 rejected with \"state mismatch\"", i, vs)
		}
	}
	if created, _ := p.Stats(); created < 1 || created > 4 {
		t.Errorf("created %d instances, want between 1 and the pool size 4", created)
	}
	// A cycle without the schedwasm.PreFilter state: every node is rejected.
	c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: pod, State: framework.NewCycleState(), Nodes: testNodes("n0", "n1")}
	if err := c.Do(ctx, p); err != nil {
		t.Fatal(err)
	}
	if len(c.Verdicts) != 2 || c.Verdicts[0].Reason != "no state" || c.Verdicts[0].Code != schedwasm.CodeUnschedulableAndUnresolvable {
		t.Errorf("fresh cycle: verdicts %+v, want both nodes rejected with \"no state\"", c.Verdicts)
	}
}

func TestCallerCancellationIsNotAPluginFailure(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "loop-cancel", "loop.wat", wasmhost.LoadOptions{Timeout: time.Hour}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(20 * time.Millisecond)
		cancel()
	}()
	err = newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n0")).Do(ctx, p)
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonCanceled {
		t.Fatalf("got %v, want a canceled call", err)
	}
	if got := failures(h, "loop-cancel", "filter"); got != 0 {
		t.Errorf("failures metric counted a cancellation: %v", got)
	}
}

// A call with Wait gives up when no instance becomes idle in time, as a cancellation (not
// the plugin's failure), while the call holding the instance goes on.
func TestWaitForAnIdleInstance(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "loop-wait", "loop.wat", wasmhost.LoadOptions{Timeout: time.Hour}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := make(chan error, 1)
	go func() {
		holder <- newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n0")).Do(ctx, p)
	}()
	for len(p.IdleMemory()) > 0 {
		time.Sleep(time.Millisecond) // until the looping call holds the only instance
	}
	err = p.Do(context.Background(), &wasmhost.Call{Kind: schedwasm.Filter, Count: 1, Wait: 50 * time.Millisecond})
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonCanceled {
		t.Fatalf("got %v, want a call that gave up waiting", err)
	}
	select {
	case err := <-holder:
		t.Fatalf("the call holding the instance ended: %v", err)
	default:
	}
	cancel()
	if err := <-holder; !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonCanceled {
		t.Fatalf("holder: got %v, want a canceled call", err)
	}
	if got := failures(h, "loop-wait", "filter"); got != 0 {
		t.Errorf("failures metric counted a wait: %v", got)
	}
}

func TestClosedPoolRefusesCalls(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "closed", "trap.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	err = newCall(schedwasm.Filter, testPod("p", nil), testNodes("n0")).Do(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "plugin was closed") {
		t.Fatalf("got %v, want a closed-plugin error", err)
	}
}

func TestDoRejectsKindsTheModuleDoesNotExport(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "trap-only-filter", "trap.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := newCall(schedwasm.Score, testPod("p", nil), testNodes("n0")).Do(context.Background(), p); err == nil || !strings.Contains(err.Error(), "module does not export wasmkube_score") {
		t.Fatalf("got %v", err)
	}
}

// failures reads the failure counter of one plugin and kind.
func failures(h *wasmhost.Host, plugin, kind string) float64 {
	var m dto.Metric
	if err := h.Failures().WithLabelValues(plugin, kind).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A rejection without a reason gets the plugin's name as its reason, so that the
// scheduler's "0/N nodes are available" message still says who rejected the node.
func TestRejectionWithoutReasonNamesThePlugin(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "quiet", "noreason.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := newCall(schedwasm.Filter, testPod("p", nil), testNodes("n0", "n1"))
	if err := c.Do(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	want := []schedwasm.Verdict{{Index: 0, Code: schedwasm.CodeUnschedulable, Reason: "rejected by plugin quiet"}}
	if len(c.Verdicts) != 1 || c.Verdicts[0] != want[0] {
		t.Errorf("verdicts %+v, want %+v", c.Verdicts, want)
	}
}

// A memory.grow beyond the limit ends the call at once as a memory-limit failure (the
// guest never sees -1, so a grow loop cannot spin until its time limit), and does not make
// a later, unrelated trap a memory-limit failure.
func TestRefusedGrowEndsTheCallAndIsForgotten(t *testing.T) {
	h, _ := newHost(t)
	p, err := load(t, h, "cope", "growcope.wat", wasmhost.LoadOptions{}).NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n0")).Do(context.Background(), p)
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonMemory {
		t.Fatalf("call with a refused grow: got %v, want a %q failure", err, wasmhost.ReasonMemory)
	}
	err = newCall(schedwasm.Filter, testPod("p", map[string]string{"late": ""}), testNodes("n0")).Do(context.Background(), p)
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonTrap {
		t.Fatalf("later trap: got %v, want a %q failure", err, wasmhost.ReasonTrap)
	}
}

// A module the rewriter refuses still loads, with wazero's interruption, and its calls
// still stop at the time limit.
func TestModuleThatCannotBeRewrittenStillTimesOut(t *testing.T) {
	h, _ := newHost(t)
	m := load(t, h, "startloop", "startloop.wat", wasmhost.LoadOptions{Timeout: 50 * time.Millisecond})
	if m.Interrupt() != wasmhost.InterruptContext {
		t.Fatalf("interrupt %s, want %s", m.Interrupt(), wasmhost.InterruptContext)
	}
	p, err := m.NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = newCall(schedwasm.Filter, testPod("p", map[string]string{"bad": ""}), testNodes("n0")).Do(context.Background(), p)
	var ce *wasmhost.CallError
	if !errors.As(err, &ce) || ce.Reason != wasmhost.ReasonTimeout {
		t.Fatalf("got %v, want a timeout", err)
	}
	if err := newCall(schedwasm.Filter, testPod("p", nil), testNodes("n0")).Do(context.Background(), p); err != nil {
		t.Fatalf("next call: %v", err)
	}
}

func TestShippedModulesUseTheDeadlineFlag(t *testing.T) {
	h, _ := newHost(t)
	for _, wat := range []string{"loop.wat", "grow.wat", "stateful.wat"} {
		if m := load(t, h, wat, wat, wasmhost.LoadOptions{}); m.Interrupt() != wasmhost.InterruptDeadline {
			t.Errorf("%s: interrupt %s, want %s", wat, m.Interrupt(), wasmhost.InterruptDeadline)
		}
	}
}

// A module with DWARF sections (clang -g; Rust's std ships megabytes of it) must not make
// traps expensive: wazero would symbolize every trap's stack trace from the DWARF (about
// 300ms per trap for a Rust std module, long enough to be misreported as a timeout), and
// the host keeps only the trace's first line anyway. So the raw trap carries no source
// positions.
func TestTrapsAreNotSymbolizedFromDWARF(t *testing.T) {
	clang, err := exec.LookPath("clang")
	if err != nil {
		t.Fatal("clang not found (install it: scripts/deps.sh)")
	}
	dir := t.TempDir()
	src, out := filepath.Join(dir, "dwarfguest.c"), filepath.Join(dir, "dwarfguest.wasm")
	code := `__attribute__((export_name("wasmkube_abi_version"))) int v(void) { return 1; }
__attribute__((export_name("wasmkube_filter"))) int f(int n) {
	if (n > 1)
		__builtin_trap();
	return 0;
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(clang, "--target=wasm32", "-nostdlib", "-g", "-O0", "-Wl,--no-entry", "-o", out, src).CombinedOutput(); err != nil {
		t.Fatalf("clang: %v\n%s", err, b)
	}
	h, _ := newHost(t)
	m, err := h.Load(context.Background(), wasmhost.LoadOptions{Name: "dwarf", Path: out})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	p, err := m.NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = wasmhost.RunRaw(p, schedwasm.Filter, 2)
	if err == nil {
		t.Fatal("the guest did not trap")
	}
	if strings.Contains(err.Error(), "dwarfguest.c") {
		t.Errorf("the trap was symbolized from DWARF:\n%v", err)
	}
}

// Modules of the same bytes and memory limit share one compiled module whatever their
// names and time limits (a swap to a renamed plugin compiles nothing), and one that
// nobody uses any more is kept for the next load; another memory limit is another
// runtime; broken bytes are not kept, so they are evaluated at every load.
func TestModulesShareCompiledCodeByContent(t *testing.T) {
	h, _ := newHost(t)
	a := load(t, h, "a", "trap.wat", wasmhost.LoadOptions{})
	b := load(t, h, "b", "trap.wat", wasmhost.LoadOptions{Timeout: time.Second})
	if !wasmhost.SameCompiled(a, b) || a.Name() != "a" || b.Name() != "b" {
		t.Fatal("two plugins of the same bytes compiled twice")
	}
	if b.Timeout() != time.Second || a.Timeout() != wasmhost.DefaultTimeout {
		t.Fatalf("time limits %s and %s: a plugin's own limit must stay its own", a.Timeout(), b.Timeout())
	}
	if c := load(t, h, "c", "trap.wat", wasmhost.LoadOptions{MemoryLimit: 1 << 20}); wasmhost.SameCompiled(a, c) {
		t.Fatal("another memory limit shares the runtime of the first")
	}
	_ = a.Close(context.Background())
	_ = b.Close(context.Background())
	d := load(t, h, "d", "trap.wat", wasmhost.LoadOptions{})
	if !wasmhost.SameCompiled(a, d) {
		t.Fatal("a module nobody used any more was compiled again")
	}
	// Each pool still works on the shared module.
	p, err := d.NewPool(context.Background(), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := newCall(schedwasm.Filter, testPod("p", nil), testNodes("n0")).Do(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.Load(context.Background(), wasmhost.LoadOptions{Name: "broken", Wasm: []byte("\x00asm\x01\x00\x00\x00\x05")}); err == nil {
			t.Fatal("a broken module loaded")
		}
	}
}
