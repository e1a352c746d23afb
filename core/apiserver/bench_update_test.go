package apiserver_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// BenchmarkPodUpdate updates pods (a label change, client-go's typed Update in protobuf)
// from 16 concurrent clients, each on its own pod, and reports updates/s and the CPU of
// the whole process per update (client, TLS, API server and etcd together): the figure
// that managedFields tracking changes, compared A/B in docs/benchmarks.md.
//
//	go test ./core/apiserver -run '^$' -bench PodUpdate -benchtime 5000x
func BenchmarkPodUpdate(b *testing.B) {
	const clients = 16
	srv := apiservertest.Start(b)
	cs := make([]kubernetes.Interface, clients)
	for i := range cs {
		c, err := kubernetes.NewForConfig(srv.Config)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
	}
	for i, c := range cs {
		if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("u-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0, start := processCPU(b), time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			api := cs[w].CoreV1().Pods("default")
			p := testPod(fmt.Sprintf("u-%d", w))
			cur, err := api.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				failed.Store(err)
				return
			}
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				cur.Labels["rev"] = fmt.Sprint(i)
				if cur, err = api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "updates/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/update")
}

// BenchmarkPodCreateCPU is BenchmarkPodCreate's work (16 clients creating pods) reporting
// the CPU of the whole process per create, for the same A/B.
//
//	go test ./core/apiserver -run '^$' -bench PodCreateCPU -benchtime 5000x
func BenchmarkPodCreateCPU(b *testing.B) {
	const clients = 16
	srv := apiservertest.Start(b)
	cs := make([]kubernetes.Interface, clients)
	for i := range cs {
		c, err := kubernetes.NewForConfig(srv.Config)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
		if _, err := c.CoreV1().Pods("default").Create(ctx, testPod(fmt.Sprintf("warm-%d", i)), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	b.ResetTimer()
	cpu0, start := processCPU(b), time.Now()
	for w := 0; w < clients; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			api := cs[w].CoreV1().Pods("default")
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if _, err := api.Create(ctx, testPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/create")
}
