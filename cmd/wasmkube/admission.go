package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/webhook"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// newAdmission builds the admission plugins the API server runs after its built-in ones,
// in upstream's order within each phase (docs/admission.md): the wasm policies of the
// config file's admission: section (none without a config file, on a host of their own:
// the scheduler's host has the scheduler's kinds; the compilation cache on disk is
// shared), then the MutatingAdmissionPolicies and ValidatingAdmissionPolicies, then the
// admission webhooks, all three read from the served objects.
func newAdmission(ctx context.Context, dataDir, configFile string, log *slog.Logger) (*admitwasm.Policies, []admission.Plugin, error) {
	var pol *admitwasm.Policies
	var plugins []admission.Plugin
	if configFile != "" {
		host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension},
			CacheDir: filepath.Join(dataDir, "wasm-cache"), Logger: log, Registerer: prometheus.DefaultRegisterer})
		if err != nil {
			return nil, nil, err
		}
		// The API server's /metrics serves the default registry.
		pol, err = admitwasm.New(ctx, admitwasm.Options{Host: host, ConfigFile: configFile, Logger: log, Registerer: prometheus.DefaultRegisterer})
		if err != nil {
			return nil, nil, err
		}
		plugins = append(plugins, pol)
	}
	hooks, err := webhook.New(webhook.Config{Registerer: prometheus.DefaultRegisterer, Default: defaults.Default})
	if err != nil {
		return nil, nil, err
	}
	plugins = append(plugins, celpolicy.New(celpolicy.Config{Default: defaults.Default}), hooks)
	return pol, plugins, nil
}

// runAdmission records the policies' Events through srv and swaps them when the config
// file changes, until ctx ends.
func runAdmission(ctx context.Context, pol *admitwasm.Policies, srv *apiserver.Server, log *slog.Logger) {
	if pol == nil {
		return
	}
	client, err := kubernetes.NewForConfig(srv.AdminRESTConfig())
	if err != nil {
		log.Error("admission policies: no client for events", "err", err)
		client = nil
	}
	go pol.Run(ctx, client)
}
