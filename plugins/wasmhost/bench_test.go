package wasmhost_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchmarkInterrupt compares the two ways of enforcing time limits on the same Go guest
// (pack-score over 5000 nodes in one call): the inserted deadline check and wazero's
// WithCloseOnContextDone.
func BenchmarkInterrupt(b *testing.B) {
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 5000)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	nodes := testNodes(names...)
	pod := testPod("p", nil)
	for _, mode := range []bool{false, true} {
		o := wasmhost.LoadOptions{Name: "pack", Path: wasmbuild.Go(b, "wasm-examples/go/pack-score")}
		if mode {
			o = wasmhost.WithContextInterrupt(o)
		}
		m, err := h.Load(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		p, err := m.NewPool(ctx, nil, 1)
		if err != nil {
			b.Fatal(err)
		}
		c := &schedwasm.Call{Kind: schedwasm.Score, Pod: pod, Requests: schedwasm.NewPodRequests(pod), Nodes: nodes, Scores: make([]int64, len(nodes))}
		b.Run(string(m.Interrupt()), func(b *testing.B) {
			for b.Loop() {
				if err := c.Do(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(nodes)), "ns/node")
		})
		_ = m.Close(ctx)
	}
}
