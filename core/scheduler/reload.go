package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/internal/configwatch"
)

// profileSet is everything one version of the config produced. It is swapped as a
// whole (atomic pointer) between scheduling cycles.
type profileSet struct {
	raw        []byte
	cfg        *config.Config
	frameworks map[string]*runtime.Framework
	wasm       map[string]wasmEntry
	// api is the API tier's plugins (WasmPolicies), joined to the file's profiles.
	api []apiEntry

	// Cycles in flight hold a reference; a retired set closes its plugins when the last
	// one lets go (a swap never closes a plugin under a running cycle).
	mu      sync.Mutex
	refs    int
	retired bool
	log     *slog.Logger
}

// acquire takes a reference for one scheduling cycle (and its binding cycle); false when
// the set is retired, and the caller loads the one that replaced it.
func (ps *profileSet) acquire() bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.retired {
		return false
	}
	ps.refs++
	return true
}

// release returns a reference taken by acquire.
func (ps *profileSet) release() {
	ps.mu.Lock()
	ps.refs--
	last := ps.retired && ps.refs == 0
	ps.mu.Unlock()
	if last {
		ps.close()
	}
}

// retire marks a set replaced; its plugins are closed now or when its last cycle ends.
func (ps *profileSet) retire() {
	ps.mu.Lock()
	if ps.retired {
		ps.mu.Unlock()
		return
	}
	ps.retired = true
	idle := ps.refs == 0
	ps.mu.Unlock()
	// Pods held at Permit by the retired plugins would keep the set (and their room)
	// until their timeout: they are rejected and requeue under the new profiles.
	for _, f := range ps.frameworks {
		f.RejectWaitingPods("the scheduler profile was replaced by a config change")
	}
	if idle {
		ps.close()
	}
}

func (ps *profileSet) close() {
	for name, f := range ps.frameworks {
		if err := f.Close(); err != nil && ps.log != nil {
			ps.log.Warn("closing a retired profile's plugins", "profile", name, "err", err)
		}
	}
}

// wasmEntry remembers a loaded module so that a reload that leaves it unchanged (same
// declaration, same file bytes) reuses it instead of compiling it again.
type wasmEntry struct {
	key     string
	factory framework.PluginFactory
}

// build turns config bytes into a profile set, reusing unchanged wasm modules of old. A
// build whose snapshot a newer change supersedes stops after the loads in progress and
// returns configwatch.ErrSuperseded.
func (s *Scheduler) build(ctx context.Context, snap configwatch.Snapshot, old *profileSet) (*profileSet, error) {
	var api []apiEntry
	if old != nil {
		api = old.api
	}
	return s.buildWith(ctx, snap, old, api)
}

// buildWith is build with the API tier's plugins api.
func (s *Scheduler) buildWith(ctx context.Context, snap configwatch.Snapshot, old *profileSet, api []apiEntry) (*profileSet, error) {
	data := snap.Data
	cfg, err := config.Parse(data)
	if err != nil {
		return nil, err
	}
	registry := plugins.NewInTreeRegistry()
	ps := &profileSet{raw: data, cfg: cfg, frameworks: map[string]*runtime.Framework{}, wasm: map[string]wasmEntry{}, log: s.log}
	// A plugin the file now declares wins over the API tier's of that name.
	for _, e := range api {
		if !slices.ContainsFunc(cfg.WasmPlugins, func(w config.WasmPlugin) bool { return w.Name == e.Plugin.Name }) {
			ps.api = append(ps.api, e)
		}
	}
	// The new modules are loaded (compiled, checked) in parallel, at most one per CPU: a
	// swap of several plugins costs the slowest one, not their sum.
	type slot struct {
		key     string
		path    string
		factory framework.PluginFactory
		err     error
		skipped bool
	}
	slots := make([]slot, len(cfg.WasmPlugins))
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, w := range cfg.WasmPlugins {
		field := fmt.Sprintf("scheduler.wasmPlugins[%d]", i)
		if _, builtin := registry[w.Name]; builtin {
			return nil, &config.Error{Field: field + ".name", Msg: fmt.Sprintf("%q is the name of a built-in plugin", w.Name)}
		}
		if s.opts.WasmLoader == nil {
			return nil, &config.Error{Field: field, Msg: fmt.Sprintf("wasm plugin %q declared, but this scheduler has no wasm loader", w.Name)}
		}
		file, err := w.Resolve(s.baseDir)
		if err != nil {
			return nil, &config.Error{Field: field + ".path", Msg: fmt.Sprintf("wasm plugin %q: %v", w.Name, err)}
		}
		slots[i] = slot{key: file.Key(w), path: file.Path}
		if old != nil {
			if e, ok := old.wasm[w.Name]; ok && e.key == slots[i].key {
				slots[i].factory = e.factory
				continue
			}
		}
		wg.Add(1)
		go func(sl *slot, w config.WasmPlugin) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if snap.Superseded() {
				sl.skipped = true
				return
			}
			sl.factory, sl.err = s.opts.WasmLoader(ctx, w, s.baseDir)
			snap.Building()
		}(&slots[i], w)
	}
	wg.Wait()
	if snap.Superseded() {
		return nil, configwatch.ErrSuperseded
	}
	for i, w := range cfg.WasmPlugins {
		sl := slots[i]
		if sl.skipped {
			return nil, configwatch.ErrSuperseded
		}
		if sl.err != nil {
			return nil, &config.Error{Field: fmt.Sprintf("scheduler.wasmPlugins[%d]", i), Msg: fmt.Sprintf("wasm plugin %q (%s): %v", w.Name, sl.path, sl.err)}
		}
		ps.wasm[w.Name] = wasmEntry{key: sl.key, factory: sl.factory}
		registry[w.Name] = sl.factory
	}
	top := config.DefaultExplainTopNodes
	if cfg.ExplainTopNodes != nil {
		top = max(0, int(*cfg.ExplainTopNodes))
	}
	profiles, monitors, err := withAPI(cfg, ps.api, registry)
	if err != nil {
		return nil, err
	}
	for i := range profiles {
		p := &profiles[i]
		pct := int32(0)
		if cfg.PercentageOfNodesToScore != nil {
			pct = *cfg.PercentageOfNodesToScore
		}
		if p.PercentageOfNodesToScore != nil {
			pct = *p.PercentageOfNodesToScore
		}
		fwk, err := runtime.New(ctx, registry, p, runtime.Options{
			Client:                   s.client,
			Lister:                   s.snapshot,
			Nominator:                s.queue,
			Parallelism:              int(cfg.Parallelism),
			PercentageOfNodesToScore: pct,
			ExplainTopNodes:          top,
			RecordNodes:              recordNodes(cfg),
			RecordWhole:              func() bool { return s.explorer.WantWhole() },
			Metrics:                  s.metrics,
			InformerFactory:          s.factory,
			MonitorScores:            monitors[p.SchedulerName],
			Batching:                 p.BatchingEnabled(),
		})
		if err != nil {
			ps.close() // the profiles built so far
			return nil, err
		}
		ps.frameworks[p.SchedulerName] = fwk
	}
	return ps, nil
}

// Reload builds profiles from a whole config file's bytes and, if that works, puts
// them in force from the next scheduling cycle on. On failure the profiles in force
// stay, and the failure is logged, counted (wasmkube_scheduler_config_reloads_total
// {result="failure"}) and reported as a Warning event FailedConfigReload on the Lease
// kube-system/wasmkube-scheduler.
func (s *Scheduler) Reload(data []byte) error { return s.reload(configwatch.Static(data)) }

// reload is Reload of one snapshot of the file: a snapshot that a newer change
// supersedes before its profiles are in force is discarded (configwatch.ErrSuperseded),
// never applied, and is no failure.
func (s *Scheduler) reload(snap configwatch.Snapshot) error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ctx := s.runContext()
	ps, err := s.build(ctx, snap, s.profiles.Load())
	if err == nil && snap.Superseded() {
		ps.close()
		err = configwatch.ErrSuperseded
	}
	if errors.Is(err, configwatch.ErrSuperseded) {
		s.metrics.reloads.WithLabelValues("superseded").Inc()
		s.log.Debug("config reload superseded by a newer change; not applied")
		return err
	}
	if err != nil {
		s.metrics.reloads.WithLabelValues("failure").Inc()
		s.log.Error("config reload failed; the previous profiles stay in force", "err", err)
		s.recorder.Eventf(s.leaseRef(), v1.EventTypeWarning, "FailedConfigReload",
			"scheduler config not applied, previous profiles stay in force: %v", err)
		s.recordSwap("", "file", nil, err)
		return err
	}
	s.recordSwaps(s.profiles.Load(), ps)
	s.install(ps)
	s.metrics.reloads.WithLabelValues("success").Inc()
	s.log.Info("config reloaded", "profiles", s.Profiles())
	return nil
}

// install puts ps in force from the next cycle on: the set it replaces is retired (closed
// after its last cycle), and pending pods are tried again under the new profiles.
func (s *Scheduler) install(ps *profileSet) {
	s.profiles.Swap(ps).retire()
	if s.ctx != nil {
		// Informers that new plugins asked for (no-op for running ones).
		s.factory.Start(s.ctx.Done())
	}
	s.queue.MoveAllToActiveOrBackoff(nil)
	// Pods for profiles that did not exist before were ignored until now.
	if s.factory != nil {
		pods, _ := s.factory.Core().V1().Pods().Lister().List(labels.Everything())
		for _, p := range pods {
			if s.pending(p) && !s.cache.IsAssumedPod(p) {
				s.queue.Add(p)
			}
		}
	}
}

func (s *Scheduler) leaseRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Lease", APIVersion: "coordination.k8s.io/v1",
		Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName}
}

// watchConfig reloads the profiles when the config file or a module it declares changes
// (unchanged modules are reused, by content hash).
func (s *Scheduler) watchConfig(ctx context.Context) {
	configwatch.Run(ctx, configwatch.Options{
		What: "scheduler", File: s.opts.ConfigFile, Log: s.log,
		Modules: func() []string {
			var out []string
			for _, wp := range s.profiles.Load().cfg.WasmPlugins {
				out = append(out, wp.AbsPath(s.baseDir))
			}
			return out
		},
		Unchanged: func(data []byte) bool { return bytes.Equal(data, s.profiles.Load().raw) },
		Reload:    s.reload,
	})
}
