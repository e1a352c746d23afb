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
// node-resources-fit and pack-score modules, in batches of `chunk` nodes per call, against
// the native NodeResourcesFit (Filter, and Score with MostAllocated) doing the same work.
// One op is one pod over 5000 nodes; ns/node is the figure docs/benchmarks.md records.
func BenchmarkFilterScore(b *testing.B) {
	ctx := context.Background()
	nodes, p := benchCluster()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{Extension}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	l := NewLoader(h)
	mk := func(name, dir string) framework.Plugin {
		f, err := l.Load(ctx, config.WasmPlugin{Spec: modulespec.Spec{Name: name, Path: wasmbuild.Go(b, dir)}}, "")
		if err != nil {
			b.Fatal(err)
		}
		pl, err := f(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		return pl
	}
	fit := mk("fit", "wasm-examples/go/node-resources-fit").(framework.BatchFilterPlugin)
	pack := mk("pack", "wasm-examples/go/pack-score").(framework.BatchScorePlugin)
	statuses := make([]*framework.Status, benchNodes)
	scores := make([]int64, benchNodes)

	for _, chunk := range []int{1, 16, 256, benchNodes} {
		b.Run(fmt.Sprintf("wasm/chunk=%d", chunk), func(b *testing.B) {
			for b.Loop() {
				state := framework.NewCycleState()
				for lo := 0; lo < benchNodes; lo += chunk {
					hi := min(lo+chunk, benchNodes)
					fit.FilterBatch(ctx, state, p, nodes[lo:hi], statuses[lo:hi])
					if st := pack.ScoreBatch(ctx, state, p, nodes[lo:hi], scores[lo:hi]); st != nil {
						b.Fatal(st.Message())
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchNodes), "ns/node")
		})
	}

	native, err := noderesources.New(ctx, json.RawMessage(`{"scoringStrategy":{"type":"MostAllocated"}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	nf, ns := native.(framework.FilterPlugin), native.(framework.ScorePlugin)
	pre := native.(framework.PreFilterPlugin)
	b.Run("native", func(b *testing.B) {
		for b.Loop() {
			state := framework.NewCycleState()
			pre.PreFilter(ctx, state, p)
			for i, n := range nodes {
				statuses[i] = nf.Filter(ctx, state, p, n)
				scores[i], _ = ns.Score(ctx, state, p, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchNodes), "ns/node")
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
