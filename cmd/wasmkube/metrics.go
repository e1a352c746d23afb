package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/internal/profiling"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// serveMetrics serves h at /metrics, and /healthz, on addr until ctx ends; the
// scheduler, the controller manager, up and server all expose their metrics this way.
// /healthz answers 500 with the error while health (if not nil) returns one: the
// component it belongs to is not standing by or working (see leaderelect.Status).
// routes are served beside them (the profiles, pprofRoutes).
func serveMetrics(ctx context.Context, addr string, h http.Handler, health func() error, log *slog.Logger, routes ...route) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	for _, r := range routes {
		mux.Handle(r.pattern, r.h)
	}
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

// route is one more handler of a component's metrics address.
type route struct {
	pattern string
	h       http.Handler
}

// pprofRoutes are /debug/pprof/ when profiling is on (--profiling, as upstream's
// components), authorized by the API server cfg points at (internal/profiling): the
// caller needs get on the nonResourceURL /debug/pprof/*.
func pprofRoutes(cfg *rest.Config, on bool) ([]route, error) {
	if !on {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("--profiling: %w", err)
	}
	return []route{{profiling.Prefix, profiling.Delegated(client, profiling.NonResource, profiling.Handler())}}, nil
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

// negatedBool is a --flag=true|false stored negated, so that the zero value of an options
// struct means "on" (--profiling defaults to true).
type negatedBool struct{ off *bool }

func (b negatedBool) String() string {
	if b.off == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.off)
}

func (b negatedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.off = !v
	return nil
}

func (negatedBool) Type() string { return "bool" }
