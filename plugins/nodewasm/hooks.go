package nodewasm

import (
	"context"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/hook"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// AnnotationPrefix starts the annotation with which a pod asks for a plugin:
// hooks.wasmkube.io/<kind>.<container>: <plugin>, kind being startup, liveness, readiness
// or prestop.
const AnnotationPrefix = "hooks.wasmkube.io/"

// Annotation is the annotation key naming the plugin of container's hook of kind.
func Annotation(kind, container string) string { return AnnotationPrefix + kind + "." + container }

// Hooks are the hook plugins of one node: the loaded plugins of the config in force and
// its selectors. Apply swaps them as a whole; a probe resolves its plugin at every call,
// so running pods switch to the new logic at their next period. Safe for concurrent use.
type Hooks struct {
	host    *wasmhost.Host
	log     *slog.Logger
	metrics *wasmpolicy.Metrics

	applyMu sync.Mutex
	// staged holds the API tier's plugins loaded out of force (rollout AllOrNothing,
	// apitier.go), under applyMu.
	staged *wasmpolicy.Staging[*Plugin]
	cur    atomic.Pointer[pluginSet]
	// explorer records runs and swaps for the decision explorer (explorer.go).
	explorer atomic.Pointer[explorer.Recorder]
}

// pluginSet is one applied config. Probes and preStop hooks acquire its lease for their
// call; Apply retires the set it replaces (docs/plugins.md, "Lifetimes").
type pluginSet struct {
	// plugins are the file tier's and the API tier's (api, WasmPolicies) by name; a file
	// plugin wins a name both have.
	plugins   map[string]*Plugin
	api       map[string]*Plugin
	selectors []selector
	lease     *wasmhost.Set
}

// newPluginSet is a set of plugins without selectors.
func newPluginSet(plugins map[string]*Plugin) *pluginSet {
	return &pluginSet{plugins: plugins, lease: leaseOf(plugins)}
}

// leaseOf holds plugins for as long as their set is in force or used.
func leaseOf(plugins map[string]*Plugin) *wasmhost.Set {
	var loaded []*wasmhost.Loaded
	for _, p := range plugins {
		loaded = append(loaded, p.loaded)
	}
	return wasmhost.NewSet(loaded...)
}

// acquire returns the set in force with a use registered; release it with lease.Release.
func (hk *Hooks) acquire() *pluginSet {
	for {
		if set := hk.cur.Load(); set.lease.Acquire() {
			return set
		}
	}
}

type selector struct {
	config.Selector
	ns, pod labels.Selector // nil: everything
}

// New returns Hooks running plugins on h, with no plugin until Apply.
func New(h *wasmhost.Host, log *slog.Logger) *Hooks {
	if log == nil {
		log = slog.Default()
	}
	hk := &Hooks{host: h, log: log, staged: wasmpolicy.NewStaging((*Plugin).Close)}
	hk.cur.Store(newPluginSet(map[string]*Plugin{}))
	return hk
}

// Apply loads the plugins of cfg (paths relative to baseDir) and, when every one of them
// loaded, checked and passed its smoke call, puts them in force; plugins whose declaration
// and module bytes did not change are kept as they are. On error nothing changes: the
// plugins in force stay. Replaced plugins are closed once their calls in flight return
// (a drain in progress finishes on the plugin it started with).
func (hk *Hooks) Apply(ctx context.Context, cfg *config.Config, baseDir string) error {
	hk.applyMu.Lock()
	defer hk.applyMu.Unlock()
	old := hk.cur.Load()
	next := &pluginSet{plugins: map[string]*Plugin{}} // its lease is taken once it is complete
	var loaded []*Plugin
	fail := func(err error) error {
		for _, p := range loaded {
			p.Close()
		}
		hk.recordApply(old, nil, err)
		return err
	}
	// New modules load in parallel, at most one per CPU; a reload whose snapshot a newer
	// change supersedes (configwatch.FromContext) stops and is never applied.
	snap := configwatch.FromContext(ctx)
	type slot struct {
		p          *Plugin
		err        error
		superseded bool
	}
	slots := make([]slot, len(cfg.HookPlugins))
	sem := make(chan struct{}, goruntime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, spec := range cfg.HookPlugins {
		if p := old.plugins[spec.Name]; p != nil {
			if key, err := specKey(spec, baseDir); err == nil && key == p.key {
				slots[i].p = p
				continue
			}
		}
		wg.Add(1)
		go func(sl *slot, spec config.HookPlugin) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if snap.Superseded() {
				sl.superseded = true
				return
			}
			sl.p, sl.err = Load(ctx, hk.host, spec, baseDir)
			snap.Building()
		}(&slots[i], spec)
	}
	wg.Wait()
	for i, spec := range cfg.HookPlugins {
		sl := slots[i]
		if sl.err == nil && !sl.superseded && sl.p != old.plugins[spec.Name] {
			loaded = append(loaded, sl.p)
		}
	}
	if snap.Superseded() {
		return fail(configwatch.ErrSuperseded)
	}
	for i, spec := range cfg.HookPlugins {
		field := fmt.Sprintf("kubelet.hookPlugins[%d]", i)
		if sl := slots[i]; sl.err != nil {
			return fail(&config.Error{Field: field, Msg: sl.err.Error()})
		}
		next.plugins[spec.Name] = slots[i].p
	}
	for _, s := range cfg.Selectors {
		sel := selector{Selector: s}
		var err error
		if s.NamespaceSelector != nil {
			if sel.ns, err = metav1.LabelSelectorAsSelector(s.NamespaceSelector); err != nil {
				return fail(err)
			}
		}
		if s.PodSelector != nil {
			if sel.pod, err = metav1.LabelSelectorAsSelector(s.PodSelector); err != nil {
				return fail(err)
			}
		}
		next.selectors = append(next.selectors, sel)
	}
	if snap.Superseded() {
		return fail(configwatch.ErrSuperseded)
	}
	next.withAPI(old.api)
	next.lease = leaseOf(next.plugins)
	hk.cur.Store(next)
	old.lease.Retire() // its plugins that next does not keep close after their last call
	hk.inForce(next)
	hk.recordApply(old, next, nil)
	names := make([]string, 0, len(next.plugins))
	for _, spec := range cfg.HookPlugins {
		names = append(names, spec.Name)
	}
	hk.log.Info("kubelet hook plugins in force", "plugins", names, "loaded", len(loaded), "selectors", len(next.selectors))
	return nil
}

// specKey is the key Load would give spec, from the module file as it is now.
func specKey(spec config.HookPlugin, baseDir string) (string, error) {
	file, err := spec.Resolve(baseDir)
	if err != nil {
		return "", err
	}
	return file.Key(spec), nil
}

// Plugins are the names of the plugins in force.
func (hk *Hooks) Plugins() []string {
	var out []string
	for n := range hk.cur.Load().plugins {
		out = append(out, n)
	}
	return out
}

// Close closes every plugin in force.
func (hk *Hooks) Close() {
	hk.applyMu.Lock()
	defer hk.applyMu.Unlock()
	hk.staged.Close()
	hk.cur.Swap(newPluginSet(map[string]*Plugin{})).lease.Retire()
}

// NamespaceLabels returns the labels of a namespace, for selectors with a
// namespaceSelector.
type NamespaceLabels = func(ctx context.Context, namespace string) (map[string]string, error)

// Lookup returns the plugin that serves container's hook of kind (config.KindReadiness,
// ...) for pod, and how the pod asked for it ("annotation hooks.wasmkube.io/...",
// "kubelet.selectors[i]"); "" when the pod's own handler applies. A named plugin that is
// not in force is returned as a name with a nil plugin.
func (hk *Hooks) Lookup(ctx context.Context, pod *v1.Pod, container, kind string, nsLabels NamespaceLabels) (name, via string, p *Plugin) {
	return hk.lookupIn(ctx, hk.cur.Load(), pod, container, kind, nsLabels)
}

// lookupIn is Lookup in one set.
func (hk *Hooks) lookupIn(ctx context.Context, set *pluginSet, pod *v1.Pod, container, kind string, nsLabels NamespaceLabels) (name, via string, p *Plugin) {
	key := Annotation(kind, container)
	if v, ok := pod.Annotations[key]; ok {
		name, via = strings.TrimSpace(v), "annotation "+key
	} else {
		for i, s := range set.selectors {
			if s.Kind != kind || (s.Container != "" && s.Container != container) {
				continue
			}
			if s.pod != nil && !s.pod.Matches(labels.Set(pod.Labels)) {
				continue
			}
			if s.ns != nil && !s.ns.Empty() {
				nl := map[string]string{"kubernetes.io/metadata.name": pod.Namespace}
				if nsLabels != nil {
					l, err := nsLabels(ctx, pod.Namespace)
					if err != nil {
						hk.log.Warn("kubelet.selectors: namespace labels unavailable; selector skipped", "namespace", pod.Namespace, "err", err)
						continue
					}
					nl = l
				}
				if !s.ns.Matches(labels.Set(nl)) {
					continue
				}
			}
			name, via = s.Plugin, fmt.Sprintf("kubelet.selectors[%d]", i)
			break
		}
	}
	if name == "" {
		return "", "", nil
	}
	return name, via, set.plugins[name]
}

// Describe says which plugin serves container's hook of kind for pod, for the kubelet's
// event when the container starts: "" when the pod's own handler applies, an error when
// the pod names a plugin that is not in force.
func (hk *Hooks) Describe(ctx context.Context, pod *v1.Pod, container, kind string, nsLabels NamespaceLabels) (string, error) {
	name, via, p := hk.Lookup(ctx, pod, container, kind, nsLabels)
	switch {
	case name == "":
		return "", nil
	case p == nil:
		return "", missing(name, via)
	}
	return fmt.Sprintf("wasm plugin %s (%s, by %s)", name, p.path, via), nil
}

func missing(name, via string) error {
	return fmt.Errorf("wasm plugin %q (named by %s) is not declared in this node's kubelet.hookPlugins, or did not load", name, via)
}

// Runners returns the probe.Prober and hook.PreStopRunner of the hooks: a pod's plugin
// when it asks for one, the fallbacks (the built-in runners) otherwise.
func (hk *Hooks) Runners(fallbackProbe probe.Prober, fallbackPreStop hook.PreStopRunner, nsLabels NamespaceLabels) (probe.Prober, hook.PreStopRunner) {
	return &Prober{hooks: hk, fallback: fallbackProbe, ns: nsLabels}, &PreStopRunner{hooks: hk, fallback: fallbackPreStop, ns: nsLabels}
}

// Prober is a probe.Prober running a pod's wasm probe plugin, or the fallback.
type Prober struct {
	hooks    *Hooks
	fallback probe.Prober
	ns       NamespaceLabels
}

// Probe implements probe.Prober. A pod naming a plugin that is not in force gets an error
// (an Unknown result: the probe could not run, so it neither passes nor fails; the kubelet
// reports the missing plugin with an event when the container starts).
func (pr *Prober) Probe(ctx context.Context, t probe.Target, h *v1.ProbeHandler) (probe.Result, string, error) {
	kind := strings.ToLower(string(t.Kind))
	set := pr.hooks.acquire()
	defer set.lease.Release()
	name, via, p := pr.hooks.lookupIn(ctx, set, t.Pod, t.Container.Name, kind, pr.ns)
	switch {
	case name == "":
		return pr.fallback.Probe(ctx, t, h)
	case p == nil:
		return probe.Unknown, "", missing(name, via)
	}
	if p.monitor {
		return pr.hooks.monitorProbe(ctx, pr.fallback, p, t, h, kind)
	}
	start := time.Now()
	r, msg := p.Probe(ctx, t.Pod, t.Container.Name, kind, t.PodIP)
	pr.hooks.recordRun(t, kind, name, p, probeOutcome(r), msg, time.Since(start))
	return r, msg, nil
}

// PreStopRunner is a hook.PreStopRunner running a pod's wasm preStop plugin, or the
// fallback.
type PreStopRunner struct {
	hooks    *Hooks
	fallback hook.PreStopRunner
	ns       NamespaceLabels
}

// PreStop implements hook.PreStopRunner. A pod naming a plugin that is not in force gets
// an error (a FailedPreStopHook event naming it), and termination goes on.
func (pr *PreStopRunner) PreStop(ctx context.Context, t probe.Target, h *v1.LifecycleHandler) error {
	set := pr.hooks.acquire()
	defer set.lease.Release()
	name, via, p := pr.hooks.lookupIn(ctx, set, t.Pod, t.Container.Name, config.KindPreStop, pr.ns)
	switch {
	case name == "":
		return pr.fallback.PreStop(ctx, t, h)
	case p == nil:
		return missing(name, via)
	case p.monitor:
		// A preStop in Monitor mode would act on the pod: the pod's own handler runs alone.
		return pr.fallback.PreStop(ctx, t, h)
	}
	start := time.Now()
	err := p.PreStop(ctx, t.Pod, t.Container.Name, t.PodIP)
	outcome, msg := "Success", ""
	if err != nil {
		outcome, msg = "Failure", err.Error()
	}
	pr.hooks.recordRun(t, config.KindPreStop, name, p, outcome, msg, time.Since(start))
	return err
}
