package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// serveMetrics serves h at /metrics, and /healthz, on addr until ctx ends; the
// scheduler, the controller manager, up and server all expose their metrics this way.
// /healthz answers 500 with the error while health (if not nil) returns one: the
// component it belongs to is not standing by or working (see leaderelect.Status).
func serveMetrics(ctx context.Context, addr string, h http.Handler, health func() error, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if health != nil {
			if err := health(); err != nil {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, "[-]%s\nhealthz check failed\n", err)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	log.Info("serving metrics", "addr", ln.Addr().String())
	return nil
}

// gatherersHandler serves the series of several registries as one /metrics page.
func gatherersHandler(gs ...prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(prometheus.Gatherers(gs), promhttp.HandlerOpts{})
}

// hostFailuresOnly is a registry with the wasm host's failure counter alone, for an
// endpoint whose other registry already has the process collectors.
func hostFailuresOnly(h *wasmhost.Host) prometheus.Gatherer {
	r := prometheus.NewRegistry()
	r.MustRegister(h.Failures())
	return r
}

// componentHealth names a component's health check for a /healthz answer.
func componentHealth(name string, check func() error) func() error {
	return func() error {
		if err := check(); err != nil {
			return fmt.Errorf("%s failed: %w", name, err)
		}
		return nil
	}
}

// schedulerHealth is the scheduler's /healthz check.
func schedulerHealth(s *scheduler.Scheduler) func() error {
	return componentHealth("scheduler", s.Check)
}
