package apiserver_test

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// BenchmarkPodCreate creates pods through client-go from concurrent clients against the
// real server (TLS, admission with defaults and validation, embedded etcd) and reports
// creates/s and the p50/p99 latency of one create.
//
//	go test ./core/apiserver -run '^$' -bench PodCreate -benchtime 5000x
func BenchmarkPodCreate(b *testing.B) {
	for _, clients := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			srv := apiservertest.Start(b)
			cs := make([]kubernetes.Interface, clients)
			for i := range cs {
				c, err := kubernetes.NewForConfig(srv.Config)
				if err != nil {
					b.Fatal(err)
				}
				cs[i] = c
			}
			// Warm the connections.
			for i, c := range cs {
				if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("warm-%d", i)), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			lat := make([][]time.Duration, clients)
			var wg sync.WaitGroup
			var failed atomic.Value
			b.ResetTimer()
			start := time.Now()
			for w := 0; w < clients; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					pods := cs[w].CoreV1().Pods("default")
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						t0 := time.Now()
						if _, err := pods.Create(ctx, testPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
							failed.Store(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			pct := func(p float64) float64 {
				return float64(all[int(p*float64(len(all)-1))].Microseconds()) / 1000
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.99), "p99-ms")
		})
	}
}
