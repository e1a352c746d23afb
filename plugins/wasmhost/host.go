// Package wasmhost runs wasmkube plugins (ABI v1, docs/abi.md) on wazero.
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
}

// Host loads and runs plugins. It is safe for concurrent use.
type Host struct {
	cache   wazero.CompilationCache
	log     *slog.Logger
	objects objectCache
}

// New returns a Host.
func New(opts Options) (*Host, error) {
	h := &Host{log: opts.Logger}
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

// Close releases the compilation cache. Modules must be closed first.
func (h *Host) Close(ctx context.Context) error { return h.cache.Close(ctx) }
