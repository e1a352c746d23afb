package admitwasm_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkMemoryBomb sends b.N pod creates, one at a time, that a memory bomb policy
// (grows its memory 1 MiB at a time and ignores refusals; 64 MiB limit, 1 s time limit,
// failurePolicy Fail) judges, while 8 other clients create pods that no policy matches.
// It reports the bomb requests' p50 and max, the policy call's own p99 (from
// wasmkube_admission_policy_duration_seconds), the other clients' p99 meanwhile, and how
// many bomb refusals named the memory limit; bomb=off sends the same requests without the
// label the policy matches, for the other clients' p99 without a bomb:
//
//	go test ./plugins/admitwasm -run '^$' -bench MemoryBomb -benchtime 20x
func BenchmarkMemoryBomb(b *testing.B) {
	for _, on := range []bool{true, false} {
		b.Run(fmt.Sprintf("bomb=%v", map[bool]string{true: "on", false: "off"}[on]), func(b *testing.B) { memoryBomb(b, on) })
	}
}

func memoryBomb(b *testing.B, on bool) {
	c := startCluster(b, `
admission:
  policies:
  - name: bomb
    path: @misbehave@
    `+podRule+`
    objectSelector: {matchLabels: {policy: bomb}}
    timeout: 1s
`)
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var others []time.Duration
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				start := time.Now()
				_, err := c.srv.Client.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("o%d-%d", g, i), nil), metav1.CreateOptions{})
				if err == nil {
					mu.Lock()
					others = append(others, time.Since(start))
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Second)
	mu.Lock()
	others = others[:0]
	mu.Unlock()
	var bombs []time.Duration
	memory := 0
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		l := map[string]string{"misbehave": "memorybomb", "policy": "bomb"}
		if !on {
			l = nil
		}
		_, err := c.srv.Client.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("bomb-%d", i), l), metav1.CreateOptions{})
		bombs = append(bombs, time.Since(start))
		if err != nil && strings.Contains(err.Error(), "memory limit") {
			memory++
		}
	}
	b.StopTimer()
	cancel()
	wg.Wait()
	q := func(d []time.Duration, f float64) float64 {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return float64(d[int(f*float64(len(d)-1)+0.5)]) / 1e6
	}
	b.ReportMetric(q(bombs, 0.5), "bomb-p50-ms")
	b.ReportMetric(q(bombs, 1), "bomb-max-ms")
	b.ReportMetric(q(others, 0.99), "others-p99-ms")
	if on {
		b.ReportMetric(histogramQuantile(b, c.reg, 0.99, "bomb")*1e3, "call-p99-ms")
	}
	b.ReportMetric(float64(memory), "memory-limit-refusals")
}
