package runtime_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSchedulePodRecording is the decision explorer's cost on scheduling: the
// default profile on 5000 nodes (as BenchmarkSchedulePod) with records off, on (up to 100
// feasible and 100 rejected nodes per attempt) and on-20 (20 and 20, the default), the
// records pushed as the
// scheduler's push does (built, JSON-encoded and POSTed to a server on the loopback that
// discards them) every 250 pods and after the last, inside the loop. The push sends as
// many records whole as 1% of a core pays for (explorer.PushCPU) and the others as
// summaries: whole/op is the share sent whole, push-us/whole the push's time (building,
// encoding) per whole record, summaries included. pods/s is the scheduling loop's
// throughput; cpu-us/op the whole process's CPU per pod.
//
//	go test ./core/scheduler/runtime -run '^$' -bench SchedulePodRecording -benchtime 2000x -count 5
func BenchmarkSchedulePodRecording(b *testing.B) {
	for _, nodes := range []int{0, 100, 20} {
		name := "off"
		switch nodes {
		case 100:
			name = "on"
		case 20:
			name = "on-20" // the default nodesPerAttempt
		}
		b.Run(name, func(b *testing.B) {
			c := cache.New()
			for i := range 5000 {
				c.AddNode(node(fmt.Sprintf("hollow-%d", i), "4", "16Gi", v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)))
			}
			snap := cache.NewSnapshot()
			c.UpdateSnapshot(snap)
			var rec *explorer.Recorder
			var push func()
			var stats explorer.PushStats
			if nodes > 0 {
				rec = explorer.NewRecorder(explorer.NewRing(explorer.DefaultSize), explorerv1.ComponentScheduler, "bench")
				push = benchPusher(b, rec.Ring(), &stats)
			}
			f, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "default-scheduler"},
				runtime.Options{Lister: snap, Parallelism: 16, ExplainTopNodes: 10, RecordNodes: nodes, RecordWhole: rec.WantWhole})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU(b)
			for i := 0; b.Loop(); i++ {
				c.UpdateSnapshot(snap)
				p := pod(fmt.Sprintf("p-%d", i), "100m", "128Mi")
				res, err := f.SchedulePod(context.Background(), framework.NewCycleState(), p)
				if err != nil {
					b.Fatal(err)
				}
				if capt := res.Explanation.Capture(); capt != nil {
					capt.SetOutcome(explorerv1.ResultScheduled, res.SuggestedHost, "")
					// As the scheduler's recordAttempt does.
					now := time.Now()
					summary := func() explorerv1.Record {
						a := capt.Summary(1, 0, nil)
						return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(now), SchedulingAttempt: &a, Summarized: capt.SummaryOnly()}
					}
					if capt.SummaryOnly() {
						rec.Record(summary)
					} else {
						rec.RecordOr(func() explorerv1.Record {
							a := capt.Attempt(1, 0, nil)
							return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(now), SchedulingAttempt: &a}
						}, summary)
					}
				}
				p.Spec.NodeName = res.SuggestedHost
				if err := c.AssumePod(p); err != nil {
					b.Fatal(err)
				}
				if push != nil && i%250 == 249 {
					push()
				}
			}
			if push != nil {
				push()
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			if sent := stats.Sent.Load(); sent > 0 {
				whole := sent - stats.Summarized.Load()
				b.ReportMetric(float64(whole)/float64(sent), "whole/op")
				b.ReportMetric(float64(stats.BuildNanos.Load())/1e3/float64(max(whole, 1)), "push-us/whole")
			}
		})
	}
}

// benchPusher returns a function that pushes ring's new records, as the scheduler does,
// to a server on the loopback that reads and discards them.
func benchPusher(b *testing.B, ring *explorer.Ring, stats *explorer.PushStats) func() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	p := explorer.NewPusher(cs.CoreV1().RESTClient(), ring, nil, stats)
	return func() { p.Flush(context.Background()) }
}
