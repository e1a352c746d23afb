package kubelet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/internal/configwatch"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/hook"
	"github.com/wasmkube/wasmkube/kubelet/probe"
)

// HookPlugins are the wasm probe and preStop plugins of the config file's kubelet:
// section; plugins/nodewasm.Hooks implements it. The kubelet applies the section at start
// and on every change of the file, and runs probes and preStop hooks through Runners.
type HookPlugins interface {
	// Apply puts the plugins of cfg in force (module paths relative to baseDir), or
	// changes nothing and returns why.
	Apply(ctx context.Context, cfg *config.Config, baseDir string) error
	// Runners wraps the built-in runners: a pod's plugin serves its hooks when the pod
	// asks for one, the built-in runner otherwise.
	Runners(probe.Prober, hook.PreStopRunner, func(ctx context.Context, namespace string) (map[string]string, error)) (probe.Prober, hook.PreStopRunner)
	// Describe says which plugin serves container's hook of kind (config.KindReadiness,
	// ...): "" for the pod's own handler, an error for a plugin the pod names that is not
	// in force.
	Describe(ctx context.Context, pod *v1.Pod, container, kind string, nsLabels func(ctx context.Context, namespace string) (map[string]string, error)) (string, error)
}

// kubeletMetrics are the kubelet's Prometheus series, with upstream's names where
// upstream has one.
type kubeletMetrics struct {
	probes  *prometheus.CounterVec
	reloads *prometheus.CounterVec
}

func newKubeletMetrics(reg prometheus.Registerer) *kubeletMetrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &kubeletMetrics{
		probes: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "prober_probe_total",
			Help: "Cumulative number of a liveness, readiness or startup probe for a container by result (built-in and wasm probes alike).",
		}, []string{"probe_type", "result", "container", "pod", "namespace"})),
		reloads: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wasmkube_kubelet_config_reloads_total",
			Help: "Reloads of the kubelet section of the config file (hook plugins), by result (success, failure).",
		}, []string{"result"})),
	}
}

// register registers c on reg, or returns the series already registered there (several
// kubelets of one process, as in tests, share them).
func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing
			}
		}
	}
	return c
}

// probeResult is the result label of prober_probe_total, as upstream spells it.
func probeResult(r probe.Result) string {
	switch r {
	case probe.Success:
		return "successful"
	case probe.Failure:
		return "failed"
	}
	return "unknown"
}

// setupHooks applies the config file's kubelet: section at start (a config that does not
// load is an error: the node starts with what the file says or not at all) and wraps the
// runners with the hook plugins.
func (k *Kubelet) setupHooks(ctx context.Context) error {
	if k.opts.ConfigFile != "" {
		abs, err := filepath.Abs(k.opts.ConfigFile)
		if err != nil {
			return err
		}
		k.opts.ConfigFile = abs
		data, err := os.ReadFile(abs)
		if err != nil {
			return fmt.Errorf("kubelet config %s: %w", abs, err)
		}
		cfg, err := config.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", abs, err)
		}
		if k.opts.Hooks == nil && len(cfg.HookPlugins) > 0 {
			return fmt.Errorf("%s: kubelet.hookPlugins declared, but this kubelet runs no wasm host", abs)
		}
		if k.opts.Hooks != nil {
			if err := k.opts.Hooks.Apply(ctx, cfg, filepath.Dir(abs)); err != nil {
				return fmt.Errorf("%s: %w", abs, err)
			}
		}
		k.hookCfg.raw, k.hookCfg.cfg = data, cfg
	}
	if k.opts.Hooks != nil {
		k.initExplorer()
		k.prober, k.preStop = k.opts.Hooks.Runners(k.prober, k.preStop, k.namespaceLabels)
	}
	return nil
}

// ReloadConfig applies the kubelet: section of a whole config file's bytes. On failure
// the plugins in force stay, and the failure is logged, counted
// (wasmkube_kubelet_config_reloads_total{result="failure"}) and reported as a Warning
// event FailedConfigReload on the Node.
func (k *Kubelet) ReloadConfig(ctx context.Context, data []byte) error {
	k.hookCfg.mu.Lock()
	defer k.hookCfg.mu.Unlock()
	err := func() error {
		cfg, err := config.Parse(data)
		if err != nil {
			return err
		}
		if k.opts.Hooks == nil {
			if len(cfg.HookPlugins) > 0 {
				return errors.New("kubelet.hookPlugins declared, but this kubelet runs no wasm host")
			}
		} else if err := k.opts.Hooks.Apply(ctx, cfg, filepath.Dir(k.opts.ConfigFile)); err != nil {
			return err
		}
		k.hookCfg.raw, k.hookCfg.cfg = data, cfg
		return nil
	}()
	if errors.Is(err, configwatch.ErrSuperseded) {
		return err // a newer change of the file is reloaded next: not a failure
	}
	if err != nil {
		k.metrics.reloads.WithLabelValues("failure").Inc()
		k.log.Error("kubelet config reload failed; the hook plugins in force stay", "file", k.opts.ConfigFile, "err", err)
		k.rec.nodeEvent(v1.EventTypeWarning, "FailedConfigReload", "kubelet config not applied, the hook plugins in force stay: %v", err)
		return err
	}
	k.metrics.reloads.WithLabelValues("success").Inc()
	k.log.Info("kubelet config reloaded", "file", k.opts.ConfigFile)
	return nil
}

// hookConfig is the kubelet: section in force and the bytes it came from.
type hookConfig struct {
	mu  sync.Mutex
	raw []byte
	cfg *config.Config
}

func (h *hookConfig) modules(baseDir string) map[string]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]bool{}
	if h.cfg == nil {
		return m
	}
	for _, p := range h.cfg.HookPlugins {
		path := p.Path
		if !filepath.IsAbs(path) {
			path = filepath.Join(baseDir, path)
		}
		m[filepath.Clean(path)] = true
	}
	return m
}

func (h *hookConfig) same(data []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return bytes.Equal(h.raw, data)
}

// watchConfig reloads the hook plugins when the config file or a module it declares
// changes, as the scheduler does.
func (k *Kubelet) watchConfig(ctx context.Context) {
	baseDir := filepath.Dir(k.opts.ConfigFile)
	configwatch.Run(ctx, configwatch.Options{
		What: "kubelet", File: k.opts.ConfigFile, Log: k.log,
		Modules: func() []string {
			var out []string
			for p := range k.hookCfg.modules(baseDir) {
				out = append(out, p)
			}
			return out
		},
		Unchanged: k.hookCfg.same,
		// The snapshot rides in the context: Hooks.Apply discards a superseded one.
		Reload: func(snap configwatch.Snapshot) error {
			return k.ReloadConfig(configwatch.NewContext(ctx, snap), snap.Data)
		},
	})
}

// namespaceLabels reads a namespace's labels for selectors with a namespaceSelector,
// cached for 30 s (the probes of every pod of a namespace ask every period).
func (k *Kubelet) namespaceLabels(ctx context.Context, ns string) (map[string]string, error) {
	k.nsMu.Lock()
	e, ok := k.nsCache[ns]
	k.nsMu.Unlock()
	if ok && time.Since(e.at) < 30*time.Second {
		return e.labels, nil
	}
	n, err := k.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	k.nsMu.Lock()
	k.nsCache[ns] = nsEntry{labels: n.Labels, at: time.Now()}
	k.nsMu.Unlock()
	return n.Labels, nil
}

type nsEntry struct {
	labels map[string]string
	at     time.Time
}

// describeHooks records, when a container starts, which wasm plugin serves each of its
// probes and its preStop hook (kubectl describe pod lists it among the events), or a
// warning naming a plugin the pod asks for that is not in force.
func (k *Kubelet) describeHooks(ctx context.Context, pod *v1.Pod, c *v1.Container) {
	if k.opts.Hooks == nil {
		return
	}
	for _, h := range []struct {
		kind    string
		present bool
	}{
		{config.KindStartup, c.StartupProbe != nil},
		{config.KindLiveness, c.LivenessProbe != nil},
		{config.KindReadiness, c.ReadinessProbe != nil},
		{config.KindPreStop, c.Lifecycle != nil && c.Lifecycle.PreStop != nil},
	} {
		if !h.present {
			continue
		}
		what := hookTitle(h.kind)
		desc, err := k.opts.Hooks.Describe(ctx, pod, c.Name, h.kind, k.namespaceLabels)
		switch {
		case err != nil:
			k.rec.event(pod, v1.EventTypeWarning, "WasmHookMissing", c.Name, "%s of container %s: %v", what, c.Name, err)
		case desc != "":
			k.rec.event(pod, v1.EventTypeNormal, "WasmHook", c.Name, "%s of container %s is served by %s", what, c.Name, desc)
		}
	}
}

func hookTitle(kind string) string {
	switch kind {
	case config.KindStartup:
		return "Startup probe"
	case config.KindLiveness:
		return "Liveness probe"
	case config.KindReadiness:
		return "Readiness probe"
	}
	return "PreStop hook"
}
