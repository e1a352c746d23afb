package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/webhook"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmoci"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

// newAdmission builds the admission plugins the API server runs after its built-in ones,
// in upstream's order within each phase (docs/admission.md): the wasm policies of the
// config file's admission: section and of the WasmPolicies of the admission hooks (the
// API tier, after the file's; on a host of their own: the scheduler's host has the
// scheduler's kinds; the compilation cache on disk is shared), then the
// MutatingAdmissionPolicies and ValidatingAdmissionPolicies, then the admission webhooks,
// all three read from the served objects.
func newAdmission(ctx context.Context, dataDir, configFile string, log *slog.Logger) (*admitwasm.Policies, []admission.Plugin, error) {
	var plugins []admission.Plugin
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension},
		CacheDir: filepath.Join(dataDir, "wasm-cache"), Logger: log, Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		return nil, nil, err
	}
	// The API server's /metrics serves the default registry. Without a config file the
	// file tier is empty and the API tier alone fills the set.
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: host, ConfigFile: configFile, Logger: log, Registerer: prometheus.DefaultRegisterer})
	if err != nil {
		return nil, nil, err
	}
	plugins = append(plugins, pol)
	hooks, err := webhook.New(webhook.Config{Registerer: prometheus.DefaultRegisterer, Default: defaults.Default})
	if err != nil {
		return nil, nil, err
	}
	plugins = append(plugins, celpolicy.New(celpolicy.Config{Default: defaults.Default}), hooks)
	return pol, plugins, nil
}

// runAdmission records the policies' Events through srv, swaps them when the config file
// changes, and loads the WasmPolicies of the admission hooks (modules fetched and cached as
// cache says: moduleCache), until ctx ends.
func runAdmission(ctx context.Context, pol *admitwasm.Policies, srv *apiserver.Server, cache wasmoci.Options, log *slog.Logger) {
	if pol == nil {
		return
	}
	cfg := srv.AdminRESTConfig()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error("admission policies: no client for events", "err", err)
		client = nil
	}
	go pol.Run(ctx, client)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		log.Error("admission policies: no client for WasmPolicies; only the config file's are loaded", "err", err)
		return
	}
	// This server's reports on its policies, and the identity Lease by which the
	// wasmpolicy controller counts it (plugins/wasmpolicy/report).
	id := apiServerIdentity(srv)
	sink, err := report.New(report.Options{Client: dyn, Component: wasmpolicy.ComponentAPIServer, Instance: id, Logger: log})
	if err != nil {
		log.Error("admission policies: no status reports", "err", err)
		return
	}
	go sink.Run(ctx)
	if client != nil {
		go report.Heartbeat(ctx, client, report.Identity{Component: wasmpolicy.ComponentAPIServer, Instance: id}, log)
	}
	loader, err := wasmpolicy.New(wasmpolicy.Config{
		Component: wasmpolicy.ComponentAPIServer, Name: id,
		Dynamic: dyn, Client: client, Target: pol,
		Cache: cache,
		// each revision put in force or refused is also a Swap on the explorer's timeline
		Sink:   wasmpolicy.RecordSwaps(sink, srv.ExplorerRecorder),
		Logger: log,
	})
	if err != nil {
		log.Error("admission policies: WasmPolicies not loaded", "err", err)
		return
	}
	go loader.Run(ctx)
}

// apiServerIdentity names this API server in WasmPolicy status: the host and the address
// it serves on, so that several servers on one host differ.
func apiServerIdentity(srv *apiserver.Server) string {
	host, _ := os.Hostname()
	return "apiserver-" + host + "-" + strings.TrimPrefix(srv.URL(), "https://")
}
