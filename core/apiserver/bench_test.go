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
			cs := benchClients(b, apiservertest.Start(b), clients)
			// Warm the connections.
			for i, c := range cs {
				if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("warm-%d", i)), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			l := drive(b, clients, func(w int, i int64) error {
				_, err := cs[w].CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{})
				return err
			})
			b.ReportMetric(float64(b.N)/l.elapsed.Seconds(), "creates/s")
			b.ReportMetric(l.percentileMs(0.50), "p50-ms")
			b.ReportMetric(l.percentileMs(0.99), "p99-ms")
		})
	}
}

// benchClients is n client-go clients of srv, each with its own connection.
func benchClients(b *testing.B, srv *apiservertest.Server, n int) []kubernetes.Interface {
	cs := make([]kubernetes.Interface, n)
	for i := range cs {
		c, err := kubernetes.NewForConfig(srv.Config)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
	}
	return cs
}

// load is what drive measured: the wall time, the whole process's CPU (client-go, TLS
// both ends, the API server, etcd) and every call's latency, sorted.
type load struct {
	elapsed, cpu time.Duration
	latencies    []time.Duration
}

// drive runs b.N calls of op from workers goroutines (op gets its worker and the call's
// number, from 1), timing only them; the first error fails the benchmark.
func drive(b *testing.B, workers int, op func(w int, i int64) error) load {
	var next atomic.Int64
	lat := make([][]time.Duration, workers)
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0, start := processCPU(b), time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t0 := time.Now()
				if err := op(w, i); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}(w)
	}
	wg.Wait()
	l := load{elapsed: time.Since(start), cpu: processCPU(b) - cpu0}
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	for _, w := range lat {
		l.latencies = append(l.latencies, w...)
	}
	sort.Slice(l.latencies, func(i, j int) bool { return l.latencies[i] < l.latencies[j] })
	return l
}

// percentileMs is the p-th latency (0 < p <= 1) in milliseconds.
func (l load) percentileMs(p float64) float64 {
	return float64(l.latencies[int(p*float64(len(l.latencies)-1))].Microseconds()) / 1000
}

// cpuPerCallUs is the process's CPU per call in microseconds.
func (l load) cpuPerCallUs(n int) float64 { return float64(l.cpu.Microseconds()) / float64(n) }
