package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/internal/configwatch"
)

// APIPlugin is a wasm plugin of the API tier (a WasmPolicy of a scheduler hook): it joins
// the profile Profile at Points after the config file's plugins, which win a name they
// share.
type APIPlugin struct {
	// Plugin is the module declaration (Name: the WasmPolicy's, Path: absolute).
	Plugin config.WasmPlugin
	Args   json.RawMessage
	// Profile is the schedulerName of the profile it joins.
	Profile string
	// Points it may serve (of PreFilter, Filter, PostFilter, PreScore, Score); it is
	// enabled at those it implements.
	Points []string
	// Weight of its Score (0: 1).
	Weight int32
	// Monitor: a Score computed beside the profile's on each cycle, never deciding;
	// Observe gets the node it would have picked ("" when it agrees).
	Monitor bool
	Observe func(would string)
	// Key identifies what is loaded: an unchanged key keeps the loaded module.
	Key string
}

// apiEntry is an APIPlugin with its factory and the points it serves.
type apiEntry struct {
	APIPlugin
	factory framework.PluginFactory
	points  []string
}

// TierConflictError: the config file declares a plugin (or a built-in has) the API
// plugin's name; the file tier wins.
type TierConflictError struct{ Name string }

func (e *TierConflictError) Error() string {
	return fmt.Sprintf("the scheduler's config file (or a built-in plugin) has a plugin named %q: it wins", e.Name)
}

// fileTierHas tells whether a built-in plugin or the config file's wasm plugins (the
// file tier, which wins) take name.
func fileTierHas(cur *profileSet, name string) bool {
	if _, ok := plugins.NewInTreeRegistry()[name]; ok {
		return true
	}
	return slices.ContainsFunc(cur.cfg.WasmPlugins, func(w config.WasmPlugin) bool { return w.Name == name })
}

// ApplyAPIPlugins puts plugins in force as the API tier, replacing the previous one as a
// whole from the next cycle on: each new or changed plugin is loaded (compiled, checked)
// and built once with its args (wasmkube_init, smoke calls) before anything changes; one
// that fails keeps its revision in force before, if any. The result has an error for each
// plugin not in force as given.
func (s *Scheduler) ApplyAPIPlugins(list []APIPlugin) map[string]error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ctx := s.runContext()
	cur := s.profiles.Load()
	old := map[string]apiEntry{}
	for _, e := range cur.api {
		old[e.Plugin.Name] = e
	}
	errs := map[string]error{}
	var next []apiEntry
	for _, p := range list {
		if fileTierHas(cur, p.Plugin.Name) {
			errs[p.Plugin.Name] = &TierConflictError{Name: p.Plugin.Name}
			continue
		}
		if e, ok := old[p.Plugin.Name]; ok && e.Key == p.Key {
			e.APIPlugin = p // same module and declaration; Observe may be new
			next = append(next, e)
			continue
		}
		if e, ok := s.apiStaged[p.Plugin.Name]; ok && e.Key == p.Key {
			// Loaded and built once by StageAPIPlugins: in force now, not loaded again.
			delete(s.apiStaged, p.Plugin.Name)
			e.APIPlugin = p
			next = append(next, e)
			continue
		}
		e, err := s.loadAPI(ctx, p)
		if err != nil {
			errs[p.Plugin.Name] = err
			if e, ok := old[p.Plugin.Name]; ok {
				next = append(next, e) // the last good revision stays
			}
			continue
		}
		next = append(next, e)
	}
	ps, err := s.buildWith(ctx, configwatch.Static(cur.raw), cur, next)
	if err != nil {
		// A whole build failing is no one plugin's doing that loadAPI could see; report it
		// on the ones that changed and keep the set in force.
		for _, e := range next {
			if o, ok := old[e.Plugin.Name]; !ok || o.Key != e.Key {
				errs[e.Plugin.Name] = err
			}
		}
		return errs
	}
	s.install(ps)
	s.log.Info("scheduler plugins of the API tier in force", "plugins", apiNames(next))
	return errs
}

// StageAPIPlugins loads each plugin as ApplyAPIPlugins does (compiled, checked, built
// once: wasmkube_init and smoke calls) and holds it out of the profiles, until an
// ApplyAPIPlugins lists it with the same Key (a WasmPolicy's AllOrNothing rollout,
// released). A held plugin not listed again is dropped (its factory holds no module). The
// result has an error for each plugin that did not load.
func (s *Scheduler) StageAPIPlugins(list []APIPlugin) map[string]error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	ctx := s.runContext()
	cur := s.profiles.Load()
	errs := map[string]error{}
	next := map[string]apiEntry{}
	for _, p := range list {
		if fileTierHas(cur, p.Plugin.Name) {
			errs[p.Plugin.Name] = &TierConflictError{Name: p.Plugin.Name}
			continue
		}
		if e, ok := s.apiStaged[p.Plugin.Name]; ok && e.Key == p.Key {
			next[p.Plugin.Name] = e
			continue
		}
		e, err := s.loadAPI(ctx, p)
		if err != nil {
			errs[p.Plugin.Name] = err
			continue
		}
		next[p.Plugin.Name] = e
	}
	s.apiStaged = next
	return errs
}

func apiNames(es []apiEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Plugin.Name
	}
	return out
}

// loadAPI loads p's module and builds its plugin once (its init and smoke calls), to learn
// the points it serves and that its args are good before it joins a profile.
func (s *Scheduler) loadAPI(ctx context.Context, p APIPlugin) (apiEntry, error) {
	if s.opts.WasmLoader == nil {
		return apiEntry{}, fmt.Errorf("wasm plugin %q: this scheduler has no wasm loader", p.Plugin.Name)
	}
	factory, err := s.opts.WasmLoader(ctx, p.Plugin, "")
	if err != nil {
		return apiEntry{}, err
	}
	trial, err := factory(ctx, p.Args, nil)
	if err != nil {
		return apiEntry{}, err
	}
	defer func() {
		if c, ok := trial.(framework.Closer); ok {
			_ = c.Close()
		}
	}()
	e := apiEntry{APIPlugin: p, factory: factory}
	for _, point := range p.Points {
		if runtime.Implements(trial, point) {
			e.points = append(e.points, point)
		}
	}
	if len(e.points) == 0 {
		return apiEntry{}, fmt.Errorf("wasm plugin %q implements none of %v", p.Plugin.Name, p.Points)
	}
	if p.Monitor && !slices.Contains(e.points, config.Score) {
		return apiEntry{}, fmt.Errorf("wasm plugin %q: Monitor mode runs a Score, and the module exports none", p.Plugin.Name)
	}
	return e, nil
}

// withAPI is the profiles of cfg with the API tier's plugins enabled in theirs (copies:
// cfg is the file's, shared with the set in force), and the monitor scores per profile.
func withAPI(cfg *config.Config, api []apiEntry, registry framework.Registry) ([]config.Profile, map[string][]runtime.MonitorScore, error) {
	profiles := make([]config.Profile, len(cfg.Profiles))
	monitors := map[string][]runtime.MonitorScore{}
	for i := range cfg.Profiles {
		p := cfg.Profiles[i]
		var joined []apiEntry
		for _, e := range api {
			if e.Profile == p.SchedulerName {
				joined = append(joined, e)
			}
		}
		if len(joined) > 0 {
			b, err := json.Marshal(p)
			if err != nil {
				return nil, nil, err
			}
			p = config.Profile{}
			if err := json.Unmarshal(b, &p); err != nil {
				return nil, nil, err
			}
			if p.Plugins == nil {
				p.Plugins = &config.Plugins{}
			}
		}
		for _, e := range joined {
			if e.Monitor {
				monitors[p.SchedulerName] = append(monitors[p.SchedulerName], runtime.MonitorScore{Name: e.Plugin.Name,
					Factory: e.factory, Args: e.Args, Weight: int64(max(e.Weight, 1)), Observe: e.Observe})
				continue
			}
			registry[e.Plugin.Name] = e.factory
			for _, point := range e.points {
				w := int32(0)
				if point == config.Score {
					w = max(e.Weight, 1)
				}
				set := p.Plugins.Set(point)
				set.Enabled = append(set.Enabled, config.Plugin{Name: e.Plugin.Name, Weight: w})
			}
			if len(e.Args) > 0 {
				p.PluginConfig = append(p.PluginConfig, config.PluginConfig{Name: e.Plugin.Name, Args: e.Args})
			}
		}
		profiles[i] = p
	}
	return profiles, monitors, nil
}

// WasmPluginTiers names the wasm plugins in force: the config file's and the API tier's.
func (s *Scheduler) WasmPluginTiers() (file, api []string) {
	ps := s.profiles.Load()
	for _, w := range ps.cfg.WasmPlugins {
		file = append(file, w.Name)
	}
	return file, apiNames(ps.api)
}

// Identity is the scheduler's name in its Lease and in WasmPolicy status.
func (s *Scheduler) Identity() string { return s.opts.Identity }
