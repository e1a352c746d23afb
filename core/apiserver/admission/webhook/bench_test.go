package webhook_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkWebhookHop creates pods one at a time with no webhook and with a no-op
// validating webhook on loopback (clientConfig.url, TLS) and reports p50 per create:
// the difference is what the webhook call adds (docs/benchmarks.md):
//
//	go test ./core/apiserver/admission/webhook -run '^$' -bench WebhookHop -benchtime 2000x
func BenchmarkWebhookHop(b *testing.B) {
	c := startCluster(b)
	hs := startHooks(b, map[string]reviewer{"/allow": allow})
	ctx := context.Background()
	cs := c.client(b, new([]string))
	n := 0 // pod names across the runs of each sub-benchmark
	for _, hook := range []bool{false, true} {
		b.Run(fmt.Sprintf("webhook=%v", hook), func(b *testing.B) {
			if hook {
				c.src.set(nil, validating("noop", vhook("noop.example.com", urlHook(hs, "/allow"))))
			} else {
				c.src.set(nil)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				n++
				t := time.Now()
				if _, err := cs.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("hop-%d", n), nil), metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
