package wasmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchRow is the cost of one entry point over one batch size.
type BenchRow struct {
	Plugin string `json:"plugin"`
	Point  string `json:"point"`
	Nodes  int    `json:"nodes"`
	Calls  int    `json:"calls"`
	// P50 and P99 are per call (one batch); PerNode is the median call over Nodes.
	P50     time.Duration `json:"p50Nanos"`
	P99     time.Duration `json:"p99Nanos"`
	PerNode time.Duration `json:"perNodeNanos"`
	// Instances and MemoryKiB describe the wasm pool after the run (0 for native).
	Instances int64  `json:"instances,omitempty"`
	MemoryKiB uint64 `json:"memoryKiB,omitempty"`
}

// BenchOptions choose the batch sizes and how long each is timed.
type BenchOptions struct {
	Args  []byte
	Sizes []int         // default 100, 1000, 5000
	Time  time.Duration // per size and point; default 1s
}

// Runner is one Filter or Score implementation to time: a wasm module's or a native
// plugin's, through the same framework interfaces the scheduler calls.
type runner struct {
	name   string
	filter func(ctx context.Context, nodes []*framework.NodeInfo, st []*framework.Status)
	score  func(ctx context.Context, nodes []*framework.NodeInfo, scores []int64) error
	pool   *wasmhost.Pool
}

// Bench times the module's Filter and Score over batches of fixture nodes.
func (p *Plugin) Bench(ctx context.Context, o BenchOptions) ([]BenchRow, error) {
	pool, err := p.mod.NewPool(ctx, o.Args, 1)
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
	if r.filter == nil && r.score == nil {
		return nil, fmt.Errorf("%s implements neither Filter nor Score", r.name)
	}
	var rows []BenchRow
	for _, n := range o.Sizes {
		nodes := fixtureNodes(n)
		for _, point := range []string{"Filter", "Score"} {
			var call func() error
			switch {
			case point == "Filter" && r.filter != nil:
				st := make([]*framework.Status, n)
				call = func() error {
					clear(st)
					r.filter(ctx, nodes, st)
					for _, s := range st {
						if s.Code() == framework.Error {
							return s.AsError()
						}
					}
					return nil
				}
			case point == "Score" && r.score != nil:
				scores := make([]int64, n)
				call = func() error { return r.score(ctx, nodes, scores) }
			default:
				continue
			}
			var times []time.Duration
			deadline := time.Now().Add(o.Time)
			for len(times) < 3 || time.Now().Before(deadline) {
				t := time.Now()
				if err := call(); err != nil {
					return nil, fmt.Errorf("%s %s over %d nodes: %w", r.name, point, n, err)
				}
				times = append(times, time.Since(t))
			}
			slices.Sort(times)
			row := BenchRow{Plugin: r.name, Point: point, Nodes: n, Calls: len(times),
				P50: times[len(times)/2], P99: times[min(len(times)-1, len(times)*99/100)]}
			row.PerNode = row.P50 / time.Duration(n)
			if r.pool != nil {
				row.Instances, _ = r.pool.Stats()
				row.MemoryKiB = sum(r.pool.IdleMemory()) >> 10
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// WriteBench prints rows as a table.
func WriteBench(w io.Writer, rows []BenchRow) {
	fmt.Fprintf(w, "%-40s %-7s %6s %7s %11s %11s %10s %9s %8s\n", "plugin", "point", "nodes", "calls", "p50/call", "p99/call", "per node", "instances", "memory")
	for _, r := range rows {
		mem, inst := "-", "-"
		if r.MemoryKiB > 0 {
			mem, inst = fmt.Sprintf("%dKiB", r.MemoryKiB), fmt.Sprint(r.Instances)
		}
		fmt.Fprintf(w, "%-40s %-7s %6d %7d %11s %11s %10s %9s %8s\n", r.Plugin, r.Point, r.Nodes, r.Calls,
			r.P50.Round(100), r.P99.Round(100), r.PerNode, inst, mem)
	}
}
