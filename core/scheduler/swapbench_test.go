package scheduler_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchmarkWasmPluginSwap measures how long a scheduler config swap takes from the write
// of the file (by rename) to the new wasm plugin in force, b.N swaps, idle and with 8
// writers creating pods (small requests, on 10 hollow nodes) that the scheduler schedules
// the whole time. Every swap renames the Score plugin and alternates between two example
// modules (pack-score, spread-score), compiled once by the first two swaps. It reports
// the p50, p99 and max of write -> in force:
//
//	go test ./core/scheduler -run '^$' -bench WasmPluginSwap -benchtime 20x
func BenchmarkWasmPluginSwap(b *testing.B) {
	mods := []string{wasmbuild.Go(b, "wasm-examples/go/pack-score"), wasmbuild.Go(b, "wasm-examples/go/spread-score")}
	config := func(i int) string {
		return fmt.Sprintf(`
scheduler:
  wasmPlugins:
  - name: swap-%d
    path: %s
  profiles:
  - schedulerName: default-scheduler
    plugins:
      score:
        enabled: [{name: swap-%d, weight: 1}]
`, i, mods[i%2], i)
	}
	for _, writers := range []int{0, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			c := newCluster(b, 10)
			dir := b.TempDir()
			file := filepath.Join(dir, "wasmkube.yaml")
			write := func(s string) time.Time {
				tmp := file + ".tmp"
				if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := os.Rename(tmp, file); err != nil {
					b.Fatal(err)
				}
				return start
			}
			write(config(0))
			h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: filepath.Join(dir, "cache")})
			if err != nil {
				b.Fatal(err)
			}
			s, _ := c.startScheduler(scheduler.Options{ConfigFile: file, WasmLoader: schedwasm.NewLoader(h).Load})
			ctx, cancel := context.WithCancel(c.ctx)
			var wg sync.WaitGroup
			var created atomic.Int64
			for g := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ctx.Err() == nil; i++ {
						p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d-%d", g, i), Namespace: "default"},
							Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox", Resources: v1.ResourceRequirements{
								Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1m"), v1.ResourceMemory: resource.MustParse("1Mi")}}}}}}
						if _, err := c.client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err == nil {
							created.Add(1)
						}
					}
				}()
			}
			time.Sleep(time.Second)
			var lat []time.Duration
			b.ResetTimer()
			for i := 1; i <= b.N+2; i++ {
				name := fmt.Sprintf("swap-%d", i)
				start := write(config(i))
				for !slices.Contains(s.WasmPlugins(), name) {
					if time.Since(start) > 2*time.Minute {
						b.Fatalf("%s not in force after 2 minutes", name)
					}
					time.Sleep(time.Millisecond)
				}
				if i > 2 {
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
			if writers > 0 {
				b.ReportMetric(float64(created.Load()), "pods")
			}
		})
	}
}
