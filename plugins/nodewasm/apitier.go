package nodewasm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/kubelet/probe"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// WithMetrics makes the hooks report their tiers and Monitor comparisons on m.
func (hk *Hooks) WithMetrics(m *wasmpolicy.Metrics) *Hooks {
	hk.metrics = m
	return hk
}

// withAPI adds the API tier's plugins that no file plugin's name shadows.
func (ps *pluginSet) withAPI(api map[string]*Plugin) {
	ps.api = map[string]*Plugin{}
	for name, p := range api {
		if _, ok := ps.plugins[name]; !ok {
			ps.plugins[name] = p
			ps.api[name] = p
		}
	}
}

// SpecOf maps a kubelet WasmPolicy onto the file tier's HookPlugin: its name is the
// hookName pods ask for.
func SpecOf(p *wasmpolicy.Policy) (config.HookPlugin, error) {
	if p.Spec.Hook != policyv1alpha1.HookKubeletProbe && p.Spec.Hook != policyv1alpha1.HookKubeletPreStop {
		return config.HookPlugin{}, &wasmpolicy.InvalidError{Policy: p.Name, Field: "spec.hook", Msg: fmt.Sprintf("%q is not a kubelet hook", p.Spec.Hook)}
	}
	spec := config.HookPlugin{Spec: p.ModuleSpec(), Args: p.Settings()}
	if k := p.Spec.Kubelet; k != nil && k.HookName != "" {
		spec.Name = k.HookName
	}
	return spec, nil
}

// ApplyPolicies implements wasmpolicy.Target: the WasmPolicies of the kubelet hooks become
// the node's API tier of hook plugins, named by their hookName, beside the config file's
// (which win a name they share). Each loads as a file plugin does; one that fails keeps
// its revision in force before.
func (hk *Hooks) ApplyPolicies(policies []*wasmpolicy.Policy) map[string]error {
	hk.applyMu.Lock()
	defer hk.applyMu.Unlock()
	cur := hk.cur.Load()
	oldByPolicy := map[string]*Plugin{}
	for _, p := range cur.api {
		oldByPolicy[p.wasmPolicy] = p
	}
	errs := map[string]error{}
	api := map[string]*Plugin{}
	for _, wp := range policies {
		reuse := oldByPolicy[wp.Name]
		held, staged := hk.staged.Take(wp.Name, wp.Key())
		if staged {
			reuse = held // loaded by StagePolicies: in force now, not loaded again
		}
		p, err := hk.apiPlugin(wp, cur, reuse)
		if err != nil {
			if staged {
				held.Close()
			}
			errs[wp.Name] = err
			if q := oldByPolicy[wp.Name]; q != nil {
				api[q.name] = q // the last good revision stays
			}
			continue
		}
		if q, taken := api[p.name]; taken {
			errs[wp.Name] = &wasmpolicy.InvalidError{Policy: wp.Name, Field: "spec.kubelet.hookName", Msg: fmt.Sprintf("%q is also the hookName of WasmPolicy %s", p.name, q.wasmPolicy)}
			if p != oldByPolicy[wp.Name] {
				p.Close()
			}
			continue
		}
		api[p.name] = p
	}
	next := &pluginSet{plugins: map[string]*Plugin{}, selectors: cur.selectors}
	for name, p := range cur.plugins {
		if cur.api[name] == nil {
			next.plugins[name] = p
		}
	}
	next.withAPI(api)
	next.lease = leaseOf(next.plugins)
	hk.cur.Store(next)
	cur.lease.Retire()
	hk.inForce(next)
	hk.log.Info("kubelet hook plugins of the API tier in force", "plugins", slices.Sorted(maps.Keys(next.api)))
	return errs
}

// StagePolicies implements wasmpolicy.Stager: each policy is loaded as ApplyPolicies loads
// it and held out of the node's plugins until an ApplyPolicies lists it (rollout
// AllOrNothing).
func (hk *Hooks) StagePolicies(policies []*wasmpolicy.Policy) map[string]error {
	hk.applyMu.Lock()
	defer hk.applyMu.Unlock()
	cur := hk.cur.Load()
	return hk.staged.Stage(policies, func(wp *wasmpolicy.Policy) (*Plugin, error) { return hk.apiPlugin(wp, cur, nil) })
}

// apiPlugin loads wp, or returns old when nothing it loads from changed.
func (hk *Hooks) apiPlugin(wp *wasmpolicy.Policy, cur *pluginSet, old *Plugin) (*Plugin, error) {
	spec, err := SpecOf(wp)
	if err != nil {
		return nil, err
	}
	if p := cur.plugins[spec.Name]; p != nil && cur.api[spec.Name] == nil {
		return nil, &wasmpolicy.ConflictError{Policy: spec.Name}
	}
	key := wp.Key()
	if old != nil && old.key == key {
		return old, nil
	}
	p, err := Load(context.Background(), hk.host, spec, "")
	if err != nil {
		return nil, err
	}
	want := Probe
	if wp.Spec.Hook == policyv1alpha1.HookKubeletPreStop {
		want = PreStop
	}
	if p.pools[want] == nil {
		p.Close()
		return nil, fmt.Errorf("hook %s: the module does not export %s", wp.Spec.Hook, want.Export)
	}
	p.key, p.wasmPolicy, p.monitor = key, wp.Name, wp.Monitor()
	return p, nil
}

// inForce publishes the node's plugins with their tier and mode.
func (hk *Hooks) inForce(ps *pluginSet) {
	if hk.metrics == nil {
		return
	}
	var out []wasmpolicy.InForce
	for _, name := range slices.Sorted(maps.Keys(ps.plugins)) {
		p := ps.plugins[name]
		e := wasmpolicy.InForce{Policy: name, Tier: wasmpolicy.TierFile, Mode: string(policyv1alpha1.ModeEnforce)}
		if ps.api[name] != nil {
			e.Tier, e.Policy = wasmpolicy.TierAPI, p.wasmPolicy
			if p.monitor {
				e.Mode = string(policyv1alpha1.ModeMonitor)
			}
		}
		out = append(out, e)
	}
	hk.metrics.SetInForce(wasmpolicy.ComponentKubelet, out)
}

// monitorProbe runs the pod's own probe, which decides, and the Monitor plugin beside it,
// counting the probes where the plugin's result differs.
func (hk *Hooks) monitorProbe(ctx context.Context, fallback probe.Prober, p *Plugin, t probe.Target, h *v1.ProbeHandler, kind string) (probe.Result, string, error) {
	r, msg, err := fallback.Probe(ctx, t, h)
	if errors.Is(ctx.Err(), context.Canceled) {
		return r, msg, err
	}
	would, why := p.Probe(ctx, t.Pod, t.Container.Name, kind, t.PodIP)
	if hk.metrics != nil && err == nil && would != probe.Unknown {
		hk.metrics.MonitorComparisons.WithLabelValues(p.wasmPolicy, wasmpolicy.ComponentKubelet).Inc()
		if would != r {
			hk.metrics.MonitorDisagreements.WithLabelValues(p.wasmPolicy, wasmpolicy.ComponentKubelet).Inc()
			hk.log.Info("kubelet probe in Monitor mode would have decided otherwise", "policy", p.wasmPolicy, "pod", t.Pod.Namespace+"/"+t.Pod.Name,
				"container", t.Container.Name, "probe", kind, "result", r, "monitor", would, "reason", why)
		}
	}
	return r, msg, err
}
