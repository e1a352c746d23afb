package storage

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// BenchmarkCreate measures pod creates through the store on the embedded etcd (fsync
// on, as in production) with 64 concurrent writers. Reports creates/s and latency
// percentiles.
//
//	go test ./core/storage -run '^$' -bench BenchmarkCreate -benchtime 5000x
func BenchmarkCreate(b *testing.B) {
	backend := embeddedFactory(b, Config{Logger: slog.New(slog.DiscardHandler)})
	s := podStore(backend)
	ctx := context.Background()
	var seq atomic.Int64
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	b.SetParallelism(32) // x GOMAXPROCS writers
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		local := make([]time.Duration, 0, 1024)
		for pb.Next() {
			name := fmt.Sprintf("bench-%d", seq.Add(1))
			t0 := time.Now()
			if _, err := s.Create(ctx, Key("pods", "default", name), newPod("default", name, map[string]string{"app": "bench"})); err != nil {
				b.Error(err)
				return
			}
			local = append(local, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, local...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "creates/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// BenchmarkWatchFanout measures delivering each write to 100 watchers of the resource,
// all fed by one etcd watch. One op is one write seen by every watcher.
//
//	go test ./core/storage -run '^$' -bench BenchmarkWatchFanout -benchtime 2000x
func BenchmarkWatchFanout(b *testing.B) {
	const watchers = 100
	backend := embeddedFactory(b, Config{WatchBuffer: 1 << 16, Logger: slog.New(slog.DiscardHandler)})
	s := podStore(backend)
	ctx := context.Background()
	var wg sync.WaitGroup
	var ws []watch.Interface
	for i := 0; i < watchers; i++ {
		w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: "1"})
		if err != nil {
			b.Fatal(err)
		}
		ws = append(ws, w)
	}
	b.ResetTimer()
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < b.N; n++ {
				if _, ok := <-w.ResultChan(); !ok {
					b.Error("watcher closed early")
					return
				}
			}
		}()
	}
	// Writers in parallel so that etcd is not the bottleneck being measured.
	createConcurrently(b, s, b.N, func(i int) *corev1.Pod { return newPod("default", fmt.Sprintf("fan-%d", i+1), nil) })
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N*watchers)/b.Elapsed().Seconds(), "deliveries/s")
	if got := backend.EtcdWatchCount(); got != 1 {
		b.Fatalf("%d watchers used %d etcd watches", watchers, got)
	}
	for _, w := range ws {
		w.Stop()
	}
}

// BenchmarkList measures listing 5,000 pods (read, decode, fill the PodList) from the
// embedded etcd. One op is one full list.
//
//	go test ./core/storage -run '^$' -bench BenchmarkList -benchtime 20x
func BenchmarkList(b *testing.B) {
	const pods = 5000
	backend := embeddedFactory(b, Config{Logger: slog.New(slog.DiscardHandler)})
	s := podStore(backend)
	ctx := context.Background()
	createConcurrently(b, s, pods, func(i int) *corev1.Pod { return newPod("default", fmt.Sprintf("list-%d", i+1), nil) })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		out, err := s.List(ctx, Prefix("pods", ""), ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if n := len(out.(*corev1.PodList).Items); n != pods {
			b.Fatalf("listed %d pods, want %d", n, pods)
		}
	}
	b.ReportMetric(float64(pods*b.N)/b.Elapsed().Seconds(), "objects/s")
}

// BenchmarkWatchIndex: 500 kubelet-like watchers, each selecting the pods of its own
// node; one op is one pod created on some node and seen by that node's watcher. With the
// index only that watcher is handed the event; without it all 500 are, and 499 filter it
// out.
//
//	go test ./core/storage -run '^$' -bench BenchmarkWatchIndex -benchtime 5000x
func BenchmarkWatchIndex(b *testing.B) {
	for _, indexed := range []bool{true, false} {
		b.Run(fmt.Sprintf("indexed=%v", indexed), func(b *testing.B) {
			const nodes = 500
			backend := embeddedFactory(b, Config{WatchBuffer: 1 << 16, Logger: slog.New(slog.DiscardHandler)})
			nodeOf := func(obj runtime.Object) string { return obj.(*corev1.Pod).Spec.NodeName }
			var opts []ResourceOption
			if indexed {
				opts = append(opts, WithWatchIndex(nodeOf))
			}
			s := backend.ForResource("pods", func() runtime.Object { return &corev1.Pod{} }, func() runtime.Object { return &corev1.PodList{} }, opts...)
			ctx := context.Background()
			var wg sync.WaitGroup
			for n := 0; n < nodes; n++ {
				node := fmt.Sprintf("node-%d", n)
				w, err := s.Watch(ctx, Prefix("pods", ""), WatchOptions{ResourceVersion: "1", IndexValue: node,
					Predicate: func(obj runtime.Object) bool { return nodeOf(obj) == node }})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Stop()
				want := b.N / nodes
				if n < b.N%nodes {
					want++
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < want; i++ {
						if _, ok := <-w.ResultChan(); !ok {
							b.Error("watcher closed early")
							return
						}
					}
				}()
			}
			b.ResetTimer()
			createConcurrently(b, s, b.N, func(i int) *corev1.Pod {
				p := newPod("default", fmt.Sprintf("idx-%d", i), nil)
				p.Spec.NodeName = fmt.Sprintf("node-%d", i%nodes)
				return p
			})
			wg.Wait()
		})
	}
}

// createConcurrently creates n pods, pod(0) to pod(n-1), with 32 concurrent writers.
func createConcurrently(b *testing.B, s Interface, n int, pod func(i int) *corev1.Pod) {
	ctx := context.Background()
	var seq atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(seq.Add(1) - 1); i < n; i = int(seq.Add(1) - 1) {
				p := pod(i)
				if _, err := s.Create(ctx, Key("pods", p.Namespace, p.Name), p); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
