package celequivalents_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchmarkPolicySets creates pods through one API server each with no policy, with the
// four example wasm policies and with their CEL twins, from clients concurrent clients,
// and reports creates/s, p50 and p99 (docs/benchmarks.md has the figures and the load):
//
//	go test ./wasm-examples/cel-equivalents -run '^$' -bench PolicySets -benchtime 5000x
func BenchmarkPolicySets(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, []byte(wasmConfig(b)), 0o600); err != nil {
		b.Fatal(err)
	}
	sets := []struct {
		name    string
		plugins func(b *testing.B) []admission.Plugin
	}{
		{"none", func(*testing.B) []admission.Plugin { return nil }},
		{"wasm", func(b *testing.B) []admission.Plugin { return wasmPolicies(b, dir, file, 4) }},
		{"cel", func(b *testing.B) []admission.Plugin {
			return []admission.Plugin{celpolicy.New(celpolicy.Config{Source: celpolicy.Static(CELSet(b)), Default: defaults.Default})}
		}},
	}
	for _, clients := range []int{16} {
		for _, set := range sets {
			b.Run(fmt.Sprintf("policies=%s/clients=%d", set.name, clients), func(b *testing.B) {
				srv := apiservertest.Start(b, apiservertest.WithAdmission(set.plugins(b)...))
				createPods(b, srv, clients)
			})
		}
	}
}

// wasmPolicies loads the wasm admission policies of the config file (want of them) into
// a host caching compiled modules under dir, closed when the benchmark ends.
func wasmPolicies(b *testing.B, dir, file string, want int) []admission.Plugin {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "wasm-cache"), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	pol, err := admitwasm.New(context.Background(), admitwasm.Options{Host: h, ConfigFile: file, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	if n := len(pol.InForce()); n != want {
		b.Fatalf("%d wasm policies loaded, want %d", n, want)
	}
	b.Cleanup(func() { pol.Close(context.Background()) })
	return []admission.Plugin{pol}
}

// createPods creates b.N admitted pods from clients goroutines and reports the figures.
func createPods(b *testing.B, srv *apiservertest.Server, clients int) {
	ctx := context.Background()
	cs := make([]kubernetes.Interface, clients)
	for i := range cs {
		c, err := kubernetes.NewForConfig(srv.Config)
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
		if _, err := c.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("warm-%d", i)), metav1.CreateOptions{}); err != nil {
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
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				t := time.Now()
				if _, err := cs[w].CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("p-%d", i)), metav1.CreateOptions{}); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t))
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
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "creates/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

// benchPod is admitted by every example policy (a pinned image, label team) and gets the
// default resources.
func benchPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"team": "bench"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}
