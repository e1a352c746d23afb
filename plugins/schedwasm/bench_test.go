package schedwasm

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/noderesources"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

const benchNodes = 5000

func benchCluster() ([]*framework.NodeInfo, *v1.Pod) {
	nodes := make([]*framework.NodeInfo, benchNodes)
	for i := range nodes {
		var pods []*v1.Pod
		for j := 0; j < i%4; j++ {
			pods = append(pods, pod(fmt.Sprintf("run-%d-%d", i, j), "500m", "1Gi"))
		}
		nodes[i] = node(fmt.Sprintf("node-%d", i), "", "4", "8Gi", pods...)
	}
	return nodes, pod("new", "1", "2Gi")
}

// BenchmarkFilterScore measures the cost per (pod, node) of a Filter plus a Score: the wasm
// node-resources-fit and pack-score modules, in batches of `chunk` nodes per call (the
// scheduler's chunks are at most 128 nodes), against the native NodeResourcesFit (Filter,
// and Score with MostAllocated) doing the same work.
// One op is one pod over 5000 nodes; ns/node is the figure docs/benchmarks.md records, and
// cpu-ns/node the same in CPU time of the benchmark's thread (what a loaded machine does
// not inflate).
func BenchmarkFilterScore(b *testing.B) {
	ctx := context.Background()
	nodes, p := benchCluster()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{Extension}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	l := NewLoader(h)
	mk := func(name, path string) framework.Plugin {
		f, err := l.Load(ctx, config.WasmPlugin{Spec: modulespec.Spec{Name: name, Path: path}}, "")
		if err != nil {
			b.Fatal(err)
		}
		pl, err := f(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		return pl
	}
	fit := mk("fit", wasmbuild.Go(b, "wasm-examples/go/node-resources-fit")).(framework.BatchFilterPlugin)
	pack := mk("pack", wasmbuild.Go(b, "wasm-examples/go/pack-score")).(framework.BatchScorePlugin)
	statuses := make([]*framework.Status, benchNodes)
	scores := make([]int64, benchNodes)
	pair := func(fit framework.BatchFilterPlugin, pack framework.BatchScorePlugin, chunk int) func(*testing.B) {
		return func(b *testing.B) {
			pass := func() {
				state := framework.NewCycleState()
				for lo := 0; lo < benchNodes; lo += chunk {
					hi := min(lo+chunk, benchNodes)
					fit.FilterBatch(ctx, state, p, nodes[lo:hi], statuses[lo:hi])
					if st := pack.ScoreBatch(ctx, state, p, nodes[lo:hi], scores[lo:hi]); st != nil {
						b.Fatal(st.Message())
					}
				}
			}
			// An untimed pass first: a module's first calls grow its guest's heap (the Go
			// runtime's), which would otherwise be charged to whichever variant runs first.
			pass()
			cpuPerNode(b, benchNodes, pass)
		}
	}
	for _, chunk := range []int{1, 16, 128, 256, benchNodes} {
		b.Run(fmt.Sprintf("wasm/chunk=%d", chunk), pair(fit, pack, chunk))
	}
	// Where the time goes (docs/benchmarks.md): the Go SDK's floor (a Filter and a Score
	// that read nothing), and the same Filter+Score by hand in WAT, through the per-node
	// host functions and through their run forms.
	empty := mk("empty", wasmbuild.Go(b, "plugins/schedwasm/testdata/go-empty"))
	watNode := mk("wat-node", wasmbuild.WAT(b, "plugins/schedwasm/testdata/fitpack-node.wat"))
	watRange := mk("wat-range", wasmbuild.WAT(b, "plugins/schedwasm/testdata/fitpack-range.wat"))
	for _, chunk := range []int{128, benchNodes} {
		b.Run(fmt.Sprintf("go-empty/chunk=%d", chunk), pair(empty.(framework.BatchFilterPlugin), empty.(framework.BatchScorePlugin), chunk))
		b.Run(fmt.Sprintf("wat-node/chunk=%d", chunk), pair(watNode.(framework.BatchFilterPlugin), watNode.(framework.BatchScorePlugin), chunk))
		b.Run(fmt.Sprintf("wat-range/chunk=%d", chunk), pair(watRange.(framework.BatchFilterPlugin), watRange.(framework.BatchScorePlugin), chunk))
	}

	native, err := noderesources.New(ctx, json.RawMessage(`{"scoringStrategy":{"type":"MostAllocated"}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	nf, ns := native.(framework.FilterPlugin), native.(framework.ScorePlugin)
	pre := native.(framework.PreFilterPlugin)
	b.Run("native", func(b *testing.B) {
		cpuPerNode(b, benchNodes, func() {
			state := framework.NewCycleState()
			pre.PreFilter(ctx, state, p)
			for i, n := range nodes {
				statuses[i] = nf.Filter(ctx, state, p, n)
				scores[i], _ = ns.Score(ctx, state, p, n)
			}
		})
	})
}

// BenchmarkCallOverhead is the fixed cost of one entry-point call (a WAT Filter over one
// node that reads one label): pool acquire, per-call time limit, wazero call.
func BenchmarkCallOverhead(b *testing.B) {
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{Extension}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	f, err := NewLoader(h).Load(ctx, config.WasmPlugin{Spec: modulespec.Spec{Name: "drain", Path: wasmbuild.WAT(b, "wasm-examples/wat/drain-filter/drain-filter.wat")}}, "")
	if err != nil {
		b.Fatal(err)
	}
	pl, err := f(ctx, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	fp := pl.(framework.BatchFilterPlugin)
	nodes, p := benchCluster()
	st := make([]*framework.Status, 1)
	state := framework.NewCycleState()
	for b.Loop() {
		fp.FilterBatch(ctx, state, p, nodes[:1], st)
	}
}
