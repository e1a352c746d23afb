// Package wasmhost runs wasmkube plugins (ABI v1, docs/abi.md) on wazero, for every
// plugin kind: it knows no kind of its own. Each adapter (plugins/schedwasm,
// plugins/admitwasm, plugins/nodewasm) hands it an Extension with its entry points and
// host functions; the host does what they share: loading and ABI checks, the deadline
// rewrite, instance pools, time and memory limits, failure classification, logs, args
// and the version check.
//
// A Host owns the on-disk compilation cache and the JSON cache of API objects. Host.Load
// compiles a module once and checks it against the ABI; Module.NewPool builds a pool of
// instances for one configuration (args) of the plugin, sized to the caller's parallelism;
// Pool.Do runs one entry-point call on an idle instance under the plugin's time limit.
// Why it is built this way (one runtime per module, batch calls, per-call contexts) is in
// docs/plugins.md.
package wasmhost

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tetratelabs/wazero"
)

// Defaults of the per-plugin limits (docs/abi.md section 6).
const (
	DefaultTimeout     = 100 * time.Millisecond
	DefaultMemoryLimit = 64 << 20
)

// Options configure a Host.
type Options struct {
	// CacheDir holds compiled machine code across restarts (a Go guest compiles in about a
	// second cold, tens of milliseconds from the cache). Empty: an in-memory cache.
	CacheDir string
	// Logger receives plugin logs and failures; nil means slog.Default().
	Logger *slog.Logger
	// Extensions are the plugin kinds the host runs, with their host functions.
	Extensions []Extension
	// Registerer, when set, gets the host's metrics (wasmkube_plugin_failures_total). Hosts
	// sharing one registerer share the series.
	Registerer prometheus.Registerer

	// heapMemory puts linear memory on the Go heap, as before it was reserved off it
	// (benchmarks compare the two; export_test.go).
	heapMemory bool
}

// Host loads and runs plugins. It is safe for concurrent use.
type Host struct {
	cache    wazero.CompilationCache
	log      *slog.Logger
	objects  ObjectCache
	abi      *abi
	failures *prometheus.CounterVec
	modules  moduleCache
	// heapMemory: Options.heapMemory.
	heapMemory bool
}

// New returns a Host.
func New(opts Options) (*Host, error) {
	a, err := newABI(opts.Extensions)
	if err != nil {
		return nil, err
	}
	h := &Host{log: opts.Logger, abi: a, failures: newFailures(opts.Registerer), heapMemory: opts.heapMemory}
	if h.log == nil {
		h.log = slog.Default()
	}
	if opts.CacheDir == "" {
		h.cache = wazero.NewCompilationCache()
		return h, nil
	}
	if err := os.MkdirAll(opts.CacheDir, 0o700); err != nil {
		return nil, fmt.Errorf("wasm compilation cache: %w", err)
	}
	c, err := wazero.NewCompilationCacheWithDir(opts.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("wasm compilation cache %s: %w", opts.CacheDir, err)
	}
	h.cache = c
	return h, nil
}

// Close frees the modules nobody uses any more and releases the compilation cache.
// Modules must be closed first.
func (h *Host) Close(ctx context.Context) error {
	h.modules.closeIdle(ctx)
	return h.cache.Close(ctx)
}

// Kinds are the entry points of the host's extensions.
func (h *Host) Kinds() Kinds { return h.abi.kinds }

// CountFailure counts one failed call of plugin's kind in wasmkube_plugin_failures_total
// (Pool.Do counts its own; adapters count failures they find in a call's results, such as
// a Filter's per-node errors).
func (h *Host) CountFailure(plugin string, k *Kind) {
	h.failures.WithLabelValues(plugin, k.String()).Inc()
}
