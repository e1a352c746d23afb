package admitwasm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// BenchmarkPolicySwap measures how long a config swap takes from the write of the file
// (by rename, as editors do) to the new set in force, b.N swaps, idle and with 8 writers
// creating pods through the API server the whole time (WASMKUBE_BENCH_WRITERS to change).
// Every swap renames the policy and alternates between two example modules and two sets
// of args, so each one builds a new policy; the modules' compiled code is warm after the
// first two swaps (the compile cache is warm, as the target says). It reports the p50,
// p99 and max of write -> in force:
//
//	go test ./plugins/admitwasm -run '^$' -bench PolicySwap -benchtime 20x
func BenchmarkPolicySwap(b *testing.B) {
	writers := 8
	if n, err := strconv.Atoi(os.Getenv("WASMKUBE_BENCH_WRITERS")); err == nil && n >= 0 {
		writers = n
	}
	mods := []string{wasmbuild.Go(b, "wasm-examples/go/require-labels"), wasmbuild.Go(b, "wasm-examples/go/disallow-latest-tag")}
	config := func(i int) string {
		args := ""
		if i%2 == 0 {
			args = fmt.Sprintf("\n    args: {labels: [team%d]}", i%4)
		}
		return fmt.Sprintf(`
admission:
  policies:
  - name: swap-%d
    path: %s
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    objectSelector: {matchLabels: {never: "true"}}%s
`, i, mods[i%2], args)
	}
	for _, w := range []int{0, writers} {
		b.Run(fmt.Sprintf("writers=%d", w), func(b *testing.B) {
			c := startCluster(b, config(0))
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			var created, failed atomic.Int64
			for g := range w {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						_, err := c.srv.Client.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("w%d-%d", g, i), nil), metav1.CreateOptions{})
						if err != nil && ctx.Err() == nil {
							failed.Add(1)
						} else if err == nil {
							created.Add(1)
						}
					}
				}()
			}
			time.Sleep(time.Second) // the writers are at work
			var lat []time.Duration
			b.ResetTimer()
			for i := 1; i <= b.N+2; i++ {
				name := fmt.Sprintf("swap-%d", i)
				tmp := c.file + ".tmp"
				if err := os.WriteFile(tmp, []byte(config(i)), 0o600); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := os.Rename(tmp, c.file); err != nil {
					b.Fatal(err)
				}
				for !slices.Contains(c.pol.InForce(), name) {
					if time.Since(start) > 2*time.Minute {
						b.Fatalf("%s not in force after 2 minutes", name)
					}
					time.Sleep(time.Millisecond)
				}
				if i > 2 { // the first two compile the two modules
					lat = append(lat, time.Since(start))
				}
				time.Sleep(200 * time.Millisecond)
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1)+0.5)]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
			if w > 0 {
				b.ReportMetric(float64(created.Load()), "pods")
				b.ReportMetric(float64(failed.Load()), "failed-creates")
			}
		})
	}
}
