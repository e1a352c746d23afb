package wasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchRow is the cost of one entry point over one batch size.
type BenchRow struct {
	Plugin string `json:"plugin"`
	Point  string `json:"point"`
	// Nodes is the batch size (0 for an admission entry point: one request per call).
	Nodes int `json:"nodes"`
	// Concurrency is the number of callers at once, each on its own instance.
	Concurrency int `json:"concurrency,omitempty"`
	Calls       int `json:"calls"`
	// P50 and P99 are per call (one batch); PerNode is the median call over Nodes.
	P50     time.Duration `json:"p50Nanos"`
	P99     time.Duration `json:"p99Nanos"`
	PerNode time.Duration `json:"perNodeNanos,omitempty"`
	// AllocsPerCall and BytesPerCall are the host's Go heap allocations per call (the
	// marshalling and copying a call costs the component, as go test -benchmem reports).
	AllocsPerCall float64 `json:"allocsPerCall"`
	BytesPerCall  float64 `json:"bytesPerCall"`
	// Instances and MemoryKiB describe the wasm pool after the run (0 for native).
	Instances int64  `json:"instances,omitempty"`
	MemoryKiB uint64 `json:"memoryKiB,omitempty"`
}

// BenchOptions choose the batch sizes, how long each is timed, and how many callers.
type BenchOptions struct {
	Args  []byte
	Sizes []int         // default 100, 1000, 5000
	Time  time.Duration // per size and point; default 1s
	// Concurrency is the number of callers at once (default 1); a wasm plugin gets a pool
	// of as many instances, as the scheduler's workers and the API server's requests do.
	Concurrency int
}

// point is one entry point to time: newCall makes one caller's call (its own buffers).
type point struct {
	name    string
	nodes   int
	newCall func() func() error
}

// Runner is one Filter or Score implementation to time: a wasm module's or a native
// plugin's, through the same framework interfaces the scheduler calls.
type runner struct {
	name   string
	filter func(ctx context.Context, nodes []*framework.NodeInfo, st []*framework.Status)
	score  func(ctx context.Context, nodes []*framework.NodeInfo, scores []int64) error
	// admission are a policy's or a kubelet hook's entry points, one request or one
	// hook call per call.
	admission []point
	pool      *wasmhost.Pool
}

// Bench times the module's Filter and Score over batches of fixture nodes, and its
// Validate and Mutate on a fixture request.
func (p *Plugin) Bench(ctx context.Context, o BenchOptions) ([]BenchRow, error) {
	pool, err := p.mod.NewPool(ctx, o.Args, max(o.Concurrency, 1))
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	kinds := p.mod.Kinds()
	pod := fixturePods()[1]
	req := schedwasm.NewPodRequests(pod)
	// One call per batch with the cycle state its PreFilter/PreScore left, as a cycle.
	do := func(ctx context.Context, k, pre *wasmhost.Kind, nodes []*framework.NodeInfo, scores []int64) (*schedwasm.Call, error) {
		state := framework.NewCycleState()
		if kinds.Has(pre) {
			c := &schedwasm.Call{Kind: pre, Pod: pod, Requests: req, State: state, Nodes: nodes}
			if err := c.Do(ctx, pool); err != nil {
				return nil, err
			}
		}
		c := &schedwasm.Call{Kind: k, Pod: pod, Requests: req, State: state, Nodes: nodes, Scores: scores}
		return c, c.Do(ctx, pool)
	}
	r := runner{name: p.mod.Name(), pool: pool}
	if kinds.Has(schedwasm.Filter) {
		r.filter = func(ctx context.Context, nodes []*framework.NodeInfo, st []*framework.Status) {
			if _, err := do(ctx, schedwasm.Filter, schedwasm.PreFilter, nodes, nil); err != nil {
				st[0] = framework.AsStatus(err)
			}
		}
	}
	if kinds.Has(schedwasm.Score) {
		r.score = func(ctx context.Context, nodes []*framework.NodeInfo, scores []int64) error {
			_, err := do(ctx, schedwasm.Score, schedwasm.PreScore, nodes, scores)
			return err
		}
	}
	// An admission policy: each entry point on the labelled pod's CREATE, a new request
	// per call (its JSON is marshalled once per request, as in the API server).
	for _, k := range kinds.Intersect(admitwasm.Kinds) {
		a := admissionFixtures()[1]
		r.admission = append(r.admission, point{name: strings.ToUpper(k.Name[:1]) + k.Name[1:], newCall: func() func() error {
			return func() error {
				c := &admitwasm.Call{Kind: k, Attributes: a}
				return c.Do(ctx, pool, nil)
			}
		}})
	}
	// A kubelet hook: each entry point for a fixture pod against a loopback endpoint that
	// answers every path with a small JSON document (hookSubject's).
	if hooks := kinds.Intersect(nodewasm.Kinds); len(hooks) > 0 {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status": "ok"}` + "\nerrors_total 0\n"))
		}))
		defer srv.Close()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}, Status: v1.PodStatus{PodIP: "10.88.0.5"}}
		for _, k := range hooks {
			r.admission = append(r.admission, point{name: strings.ToUpper(k.Name[:1]) + k.Name[1:], newCall: func() func() error {
				return func() error {
					c := &nodewasm.Call{Kind: k, Pod: pod, Container: "app", PodIP: pod.Status.PodIP, Timeout: p.mod.Timeout()}
					if k == nodewasm.Probe {
						c.ProbeKind = nodewasm.ProbeReadiness
					}
					c.RedirectTo(srv.Listener.Addr().String())
					err := c.Do(ctx, pool)
					var ce *wasmhost.CallError
					if errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError {
						return nil // a verdict of the plugin, not a failure to time
					}
					return err
				}
			}})
		}
	}
	return bench(ctx, r, o)
}

// BenchNative times the in-tree plugin name (NodeResourcesFit, ...) the same way.
func BenchNative(ctx context.Context, name string, args json.RawMessage, o BenchOptions) ([]BenchRow, error) {
	factory, ok := plugins.NewInTreeRegistry()[name]
	if !ok {
		return nil, fmt.Errorf("native:%s: no in-tree plugin of that name", name)
	}
	plug, err := factory(ctx, args, nil)
	if err != nil {
		return nil, fmt.Errorf("native:%s: %w", name, err)
	}
	return bench(ctx, runnerOf("native:"+name, plug), o)
}

func runnerOf(name string, plug framework.Plugin) runner {
	r := runner{name: name}
	pod := fixturePods()[1]
	if f, ok := plug.(framework.FilterPlugin); ok {
		r.filter = func(ctx context.Context, nodes []*framework.NodeInfo, st []*framework.Status) {
			state := framework.NewCycleState()
			if pf, ok := plug.(framework.PreFilterPlugin); ok {
				_, _ = pf.PreFilter(ctx, state, pod)
			}
			if b, ok := f.(framework.BatchFilterPlugin); ok {
				b.FilterBatch(ctx, state, pod, nodes, st)
				return
			}
			for i, n := range nodes {
				st[i] = f.Filter(ctx, state, pod, n)
			}
		}
	}
	if s, ok := plug.(framework.ScorePlugin); ok {
		r.score = func(ctx context.Context, nodes []*framework.NodeInfo, scores []int64) error {
			state := framework.NewCycleState()
			if ps, ok := plug.(framework.PreScorePlugin); ok {
				if st := ps.PreScore(ctx, state, pod, nodes); !st.IsSuccess() && !st.IsSkip() {
					return st.AsError()
				}
			}
			if b, ok := s.(framework.BatchScorePlugin); ok {
				return b.ScoreBatch(ctx, state, pod, nodes, scores).AsError()
			}
			for i, n := range nodes {
				v, st := s.Score(ctx, state, pod, n)
				if !st.IsSuccess() {
					return st.AsError()
				}
				scores[i] = v
			}
			return nil
		}
	}
	return r
}

func bench(ctx context.Context, r runner, o BenchOptions) ([]BenchRow, error) {
	if len(o.Sizes) == 0 {
		o.Sizes = []int{100, 1000, 5000}
	}
	if o.Time <= 0 {
		o.Time = time.Second
	}
	o.Concurrency = max(o.Concurrency, 1)
	if r.filter == nil && r.score == nil && len(r.admission) == 0 {
		return nil, fmt.Errorf("%s implements none of Filter, Score, Validate, Mutate, Probe and PreStop (bench times those)", r.name)
	}
	points := slices.Clone(r.admission)
	for _, n := range o.Sizes {
		if r.filter == nil && r.score == nil {
			break
		}
		nodes := fixtureNodes(n)
		if r.filter != nil {
			points = append(points, point{name: "Filter", nodes: n, newCall: func() func() error {
				st := make([]*framework.Status, n)
				return func() error {
					clear(st)
					r.filter(ctx, nodes, st)
					for _, s := range st {
						if s.Code() == framework.Error {
							return s.AsError()
						}
					}
					return nil
				}
			}})
		}
		if r.score != nil {
			points = append(points, point{name: "Score", nodes: n, newCall: func() func() error {
				scores := make([]int64, n)
				return func() error { return r.score(ctx, nodes, scores) }
			}})
		}
	}
	var rows []BenchRow
	for _, pt := range points {
		row, err := timePoint(r.name, pt, o)
		if err != nil {
			return nil, err
		}
		if r.pool != nil {
			row.Instances, _ = r.pool.Stats()
			row.MemoryKiB = sum(r.pool.IdleMemory()) >> 10
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// timePoint calls one point from o.Concurrency callers for o.Time (at least 3 calls
// each), and returns its percentiles and the host's allocations per call.
func timePoint(plugin string, pt point, o BenchOptions) (BenchRow, error) {
	calls := make([]func() error, o.Concurrency)
	for i := range calls {
		calls[i] = pt.newCall()
	}
	// One warm-up call each: instances made, buffers grown, memos filled.
	for _, call := range calls {
		if err := call(); err != nil {
			return BenchRow{}, benchError(plugin, pt, err)
		}
	}
	times := make([][]time.Duration, o.Concurrency)
	errs := make([]error, o.Concurrency)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	deadline := time.Now().Add(o.Time)
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(times[i]) < 3 || time.Now().Before(deadline) {
				t := time.Now()
				if err := call(); err != nil {
					errs[i] = err
					return
				}
				times[i] = append(times[i], time.Since(t))
			}
		}()
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	if err := errors.Join(errs...); err != nil {
		return BenchRow{}, benchError(plugin, pt, err)
	}
	all := slices.Concat(times...)
	slices.Sort(all)
	n := float64(len(all))
	row := BenchRow{Plugin: plugin, Point: pt.name, Nodes: pt.nodes, Concurrency: o.Concurrency, Calls: len(all),
		P50: all[len(all)/2], P99: all[min(len(all)-1, len(all)*99/100)],
		AllocsPerCall: float64(after.Mallocs-before.Mallocs) / n, BytesPerCall: float64(after.TotalAlloc-before.TotalAlloc) / n}
	if pt.nodes > 0 {
		row.PerNode = row.P50 / time.Duration(pt.nodes)
	}
	return row, nil
}

func benchError(plugin string, pt point, err error) error {
	if pt.nodes > 0 {
		return fmt.Errorf("%s %s over %d nodes: %w", plugin, pt.name, pt.nodes, err)
	}
	return fmt.Errorf("%s %s: %w", plugin, pt.name, err)
}

// WriteBench prints rows as a table.
func WriteBench(w io.Writer, rows []BenchRow) {
	fmt.Fprintf(w, "%-32s %-9s %6s %4s %7s %11s %11s %10s %9s %10s %9s %8s\n", "plugin", "point", "nodes", "conc", "calls", "p50/call", "p99/call", "per node", "allocs/op", "bytes/op", "instances", "memory")
	for _, r := range rows {
		mem, inst, nodes, perNode := "-", "-", "-", "-"
		if r.MemoryKiB > 0 {
			mem, inst = fmt.Sprintf("%dKiB", r.MemoryKiB), fmt.Sprint(r.Instances)
		}
		if r.Nodes > 0 {
			nodes, perNode = fmt.Sprint(r.Nodes), r.PerNode.String()
		}
		fmt.Fprintf(w, "%-32s %-9s %6s %4d %7d %11s %11s %10s %9.1f %10.0f %9s %8s\n", r.Plugin, r.Point, nodes, max(r.Concurrency, 1), r.Calls,
			r.P50.Round(100), r.P99.Round(100), perNode, r.AllocsPerCall, r.BytesPerCall, inst, mem)
	}
}
