package schedwasm

import (
	"errors"
	"fmt"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// APITier is the scheduler's wasmpolicy.Target: the WasmPolicies of the scheduler hooks
// become plugins of the profile their schedulerName names, after the config file's.
type APITier struct {
	Scheduler *scheduler.Scheduler
	Metrics   *wasmpolicy.Metrics
}

// hookPoints are the extension points a hook's module may serve (spec.scheduler.
// extensionPoints narrows them).
var hookPoints = map[policyv1alpha1.Hook][]string{
	policyv1alpha1.HookSchedulerFilter:     {config.PreFilter, config.Filter},
	policyv1alpha1.HookSchedulerScore:      {config.PreScore, config.Score},
	policyv1alpha1.HookSchedulerPostFilter: {config.PostFilter},
}

// PluginOf maps a scheduler WasmPolicy onto the scheduler's API-tier plugin.
func PluginOf(p *wasmpolicy.Policy) (scheduler.APIPlugin, error) {
	points, ok := hookPoints[p.Spec.Hook]
	if !ok {
		return scheduler.APIPlugin{}, &wasmpolicy.InvalidError{Policy: p.Name, Field: "spec.hook", Msg: fmt.Sprintf("%q is not a scheduler hook", p.Spec.Hook)}
	}
	ap := scheduler.APIPlugin{Plugin: config.WasmPlugin{Spec: p.ModuleSpec()}, Args: p.Settings(), Key: p.Key(),
		Profile: policyv1alpha1.DefaultSchedulerName, Monitor: p.Monitor()}
	if s := p.Spec.Scheduler; s != nil {
		if s.SchedulerName != "" {
			ap.Profile = s.SchedulerName
		}
		if s.Weight != nil {
			ap.Weight = *s.Weight
		}
		if len(s.ExtensionPoints) > 0 {
			var narrowed []string
			for _, e := range s.ExtensionPoints {
				for _, q := range points {
					if e == q {
						narrowed = append(narrowed, q)
					}
				}
			}
			points = narrowed
		}
	}
	ap.Points = points
	if ap.Monitor && p.Spec.Hook != policyv1alpha1.HookSchedulerScore {
		return scheduler.APIPlugin{}, &wasmpolicy.InvalidError{Policy: p.Name, Field: "spec.mode", Msg: "Monitor is served for scheduler.score only (a Filter in Monitor is not built yet)"}
	}
	if err := ap.Plugin.Validate(modulespec.RowOf("scheduler"), nil); err != nil {
		return scheduler.APIPlugin{}, &wasmpolicy.InvalidError{Policy: p.Name, Field: "spec." + err.Field, Msg: err.Msg}
	}
	return ap, nil
}

// StagePolicies implements wasmpolicy.Stager: the policies' plugins are loaded and built
// once (Scheduler.StageAPIPlugins) and held out of the profiles until ApplyPolicies lists
// them (rollout AllOrNothing).
func (t *APITier) StagePolicies(policies []*wasmpolicy.Policy) map[string]error {
	list, errs := t.plugins(policies, false)
	addTierErrors(errs, t.Scheduler.StageAPIPlugins(list))
	return errs
}

// plugins maps the policies onto the scheduler's API plugins, with an error for each that
// does not map; observe gives a Score in Monitor its comparison counters.
func (t *APITier) plugins(policies []*wasmpolicy.Policy, observe bool) ([]scheduler.APIPlugin, map[string]error) {
	errs := map[string]error{}
	var list []scheduler.APIPlugin
	for _, p := range policies {
		ap, err := PluginOf(p)
		if err != nil {
			errs[p.Name] = err
			continue
		}
		if observe && ap.Monitor && t.Metrics != nil {
			name := p.Name
			ap.Observe = func(would string) {
				t.Metrics.MonitorComparisons.WithLabelValues(name, wasmpolicy.ComponentScheduler).Inc()
				if would != "" {
					t.Metrics.MonitorDisagreements.WithLabelValues(name, wasmpolicy.ComponentScheduler).Inc()
				}
			}
		}
		list = append(list, ap)
	}
	return list, errs
}

// addTierErrors adds the scheduler's errors to errs, a name taken by the file tier as the
// loader's ConflictError.
func addTierErrors(errs, from map[string]error) {
	for name, err := range from {
		var tc *scheduler.TierConflictError
		if errors.As(err, &tc) {
			err = &wasmpolicy.ConflictError{Policy: name}
		}
		errs[name] = err
	}
}

// ApplyPolicies implements wasmpolicy.Target.
func (t *APITier) ApplyPolicies(policies []*wasmpolicy.Policy) map[string]error {
	list, errs := t.plugins(policies, true)
	addTierErrors(errs, t.Scheduler.ApplyAPIPlugins(list))
	if t.Metrics != nil {
		file, api := t.Scheduler.WasmPluginTiers()
		modes := map[string]string{}
		for _, p := range policies {
			modes[p.Name] = string(p.Spec.Mode)
		}
		var in []wasmpolicy.InForce
		for _, n := range file {
			in = append(in, wasmpolicy.InForce{Policy: n, Tier: wasmpolicy.TierFile, Mode: string(policyv1alpha1.ModeEnforce)})
		}
		for _, n := range api {
			in = append(in, wasmpolicy.InForce{Policy: n, Tier: wasmpolicy.TierAPI, Mode: modes[n]})
		}
		t.Metrics.SetInForce(wasmpolicy.ComponentScheduler, in)
	}
	return errs
}
