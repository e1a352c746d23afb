package runtime_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// default profile on 5000 nodes (as BenchmarkSchedulePod) with records off and on (100
// feasible and 100 rejected nodes per attempt, built on the recorder's goroutine as the
// scheduler does). pods/s is the scheduling loop's throughput; cpu-us/op the whole
// process's CPU per pod, the builder goroutine's included.
//
//	go test ./core/scheduler/runtime -run '^$' -bench SchedulePodRecording -benchtime 2000x -count 5
func BenchmarkSchedulePodRecording(b *testing.B) {
	for _, nodes := range []int{0, 100} {
		name := "off"
		if nodes > 0 {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			c := cache.New()
			for i := range 5000 {
				c.AddNode(node(fmt.Sprintf("hollow-%d", i), "4", "16Gi", v1.LabelTopologyZone, fmt.Sprintf("zone-%d", i%3)))
			}
			snap := cache.NewSnapshot()
			c.UpdateSnapshot(snap)
			f, err := runtime.New(context.Background(), plugins.NewInTreeRegistry(), &config.Profile{SchedulerName: "default-scheduler"},
				runtime.Options{Lister: snap, Parallelism: 16, ExplainTopNodes: 10, RecordNodes: nodes})
			if err != nil {
				b.Fatal(err)
			}
			var rec *explorer.Recorder
			if nodes > 0 {
				rec = explorer.NewRecorder(explorer.NewRing(explorer.DefaultSize), explorerv1.ComponentScheduler, "bench")
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
					rec.Record(func() explorerv1.Record {
						a := capt.Attempt(1, 0, nil)
						return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(time.Now()), SchedulingAttempt: &a}
					})
				}
				p.Spec.NodeName = res.SuggestedHost
				if err := c.AssumePod(p); err != nil {
					b.Fatal(err)
				}
			}
			rec.Close()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
		})
	}
}
