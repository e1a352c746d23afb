package nodewasm_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BenchmarkHookSwap measures how long a kubelet hook-plugin swap takes from the write of
// the config file (by rename) to the new plugin in force, through the kubelet's own path
// (configwatch, config.Parse, Hooks.Apply with the snapshot in the context), b.N swaps,
// idle and with 8 goroutines running a wasm probe (json-health-probe against a loopback
// server) the whole time. Every swap renames the plugin and alternates between two example
// modules (json-health-probe, threshold-liveness), compiled once by the first two swaps:
//
//	go test ./plugins/nodewasm -run '^$' -bench HookSwap -benchtime 20x
func BenchmarkHookSwap(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			fmt.Fprint(w, "# HELP errors_total errors\nerrors_total 3\n")
			return
		}
		fmt.Fprint(w, `{"status": "ok"}`)
	}))
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	health, threshold := wasmbuild.Go(b, "wasm-examples/go/json-health-probe"), wasmbuild.Go(b, "wasm-examples/go/threshold-liveness")
	healthArgs := fmt.Sprintf(`{"port": %d, "path": "/health", "field": "status", "value": "ok"}`, port)
	configOf := func(i int) string {
		swap := fmt.Sprintf("  - {name: swap-%d, path: %s, args: %s}\n", i, health, healthArgs)
		if i%2 == 1 {
			swap = fmt.Sprintf("  - {name: swap-%d, path: %s, args: {\"port\": %d, \"path\": \"/metrics\", \"metric\": \"errors_total\", \"max\": 10}}\n", i, threshold, port)
		}
		return fmt.Sprintf("kubelet:\n  hookPlugins:\n  - {name: load, path: %s, args: %s}\n%s", health, healthArgs, swap)
	}
	for _, writers := range []int{0, 8} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
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
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{nodewasm.Extension}, CacheDir: filepath.Join(dir, "cache"), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			hk := nodewasm.New(h, quiet)
			defer hk.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var mu sync.Mutex
			var raw []byte
			apply := func(ctx context.Context, data []byte) error {
				cfg, err := config.Parse(data)
				if err != nil {
					return err
				}
				if err := hk.Apply(ctx, cfg, dir); err != nil {
					return err
				}
				mu.Lock()
				raw = data
				mu.Unlock()
				return nil
			}
			write(configOf(0))
			data, _ := os.ReadFile(file)
			if err := apply(ctx, data); err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				configwatch.Run(ctx, configwatch.Options{What: "kubelet", File: file, Log: quiet,
					Modules: func() []string { return nil },
					Unchanged: func(d []byte) bool {
						mu.Lock()
						defer mu.Unlock()
						return bytes.Equal(d, raw)
					},
					Reload: func(snap configwatch.Snapshot) error { return apply(configwatch.NewContext(ctx, snap), snap.Data) }})
			}()
			pr, _ := hk.Runners(&fallback{}, &fallback{}, nil)
			pod := testPod(map[string]string{nodewasm.Annotation(config.KindReadiness, "web"): "load"}, nil)
			var wg sync.WaitGroup
			var probes, failed atomic.Int64
			for range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
						r, _, _ := pr.Probe(pctx, target(pod, probe.Readiness), nil)
						pcancel()
						probes.Add(1)
						if r != probe.Success && ctx.Err() == nil {
							failed.Add(1)
						}
					}
				}()
			}
			time.Sleep(time.Second)
			var lat []time.Duration
			b.ResetTimer()
			for i := 1; i <= b.N+2; i++ {
				name := fmt.Sprintf("swap-%d", i)
				start := write(configOf(i))
				for !slices.Contains(hk.Plugins(), name) {
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
			<-done
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			q := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1)+0.5)]) / 1e6 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			b.ReportMetric(float64(lat[len(lat)-1])/1e6, "max-ms")
			if writers > 0 {
				b.ReportMetric(float64(probes.Load()), "probes")
				b.ReportMetric(float64(failed.Load()), "failed-probes")
			}
		})
	}
}
