package admitwasm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// ApplyPolicies implements wasmpolicy.Target: the WasmPolicies of the admission hooks
// become the API tier of the policy set, after the config file's policies (which win a
// name they share). Each policy loads as a file policy does (compiled, checked, its
// settings given to wasmkube_init, smoke-called); one that fails keeps its revision in
// force before, the others go in force. The set is swapped between requests as a file
// reload swaps it.
func (o *Policies) ApplyPolicies(policies []*wasmpolicy.Policy) map[string]error {
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	cur := o.set.Load()
	old := map[string]*Policy{}
	for _, p := range cur.api {
		old[p.spec.Name] = p
	}
	errs := map[string]error{}
	var api []*Policy
	for _, wp := range policies {
		reuse := old[wp.Name]
		held, staged := o.staged.Take(wp.Name, wp.Key())
		if staged {
			reuse = held // loaded by StagePolicies: in force now, not loaded again
		}
		p, err := o.apiPolicy(wp, cur, reuse)
		if err != nil {
			errs[wp.Name] = err
			if staged {
				held.loaded.Close()
			}
			if q := old[wp.Name]; q != nil {
				api = append(api, q) // the last good revision stays
			}
			continue
		}
		api = append(api, p)
	}
	ps := o.compose(&policySet{raw: cur.raw, cfg: cur.cfg, byName: cur.byName, policies: filePolicies(cur)}, api)
	// The retired set lets go of the revisions ps does not keep after its last request.
	o.set.Swap(ps).lease.Retire()
	o.log.Info("admission policies of the API tier in force", "policies", names(ps.api))
	return errs
}

// StagePolicies implements wasmpolicy.Stager: each policy is loaded as ApplyPolicies loads
// it (compiled, checked, wasmkube_init, smoke calls) and held out of the set until an
// ApplyPolicies lists it (rollout AllOrNothing).
func (o *Policies) StagePolicies(policies []*wasmpolicy.Policy) map[string]error {
	o.reloadMu.Lock()
	defer o.reloadMu.Unlock()
	cur := o.set.Load()
	return o.staged.Stage(policies, func(wp *wasmpolicy.Policy) (*Policy, error) { return o.apiPolicy(wp, cur, nil) })
}

// filePolicies are the file tier's policies of a set, in config order.
func filePolicies(ps *policySet) []*Policy {
	var out []*Policy
	for _, p := range ps.policies {
		if p.hook == nil {
			out = append(out, p)
		}
	}
	return out
}

func names(ps []*Policy) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.spec.Name
	}
	return out
}

// apiPolicy loads wp, or returns old when nothing it loads from changed.
func (o *Policies) apiPolicy(wp *wasmpolicy.Policy, cur *policySet, old *Policy) (*Policy, error) {
	if cur.byName[wp.Name] != nil {
		return nil, &wasmpolicy.ConflictError{Policy: wp.Name}
	}
	key := wp.Key()
	if old != nil && old.key == key {
		return old, nil
	}
	spec, hook, err := SpecOf(wp)
	if err != nil {
		return nil, err
	}
	ctx := o.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	p, err := o.newPolicy(ctx, spec, wp.Module.Path, wp.Module.Wasm, key)
	if err != nil {
		return nil, err
	}
	if !p.pool.Module().Kinds().Has(hook) {
		p.loaded.Close()
		return nil, &wasmhost.LoadError{Plugin: wp.Name, Path: wp.Module.Path, Err: fmt.Errorf("does not export %s: it cannot serve hook %s", hook.Export, wp.Spec.Hook)}
	}
	p.hook, p.monitor = hook, wp.Monitor()
	o.warm(spec.Capabilities)
	return p, nil
}

// SpecOf maps an admission WasmPolicy onto the file tier's PolicySpec (defaulted and
// checked as a config entry is) and the kind its hook runs.
func SpecOf(wp *wasmpolicy.Policy) (PolicySpec, *wasmhost.Kind, error) {
	var hook *wasmhost.Kind
	switch wp.Spec.Hook {
	case policyv1alpha1.HookAdmissionValidate:
		hook = Validate
	case policyv1alpha1.HookAdmissionMutate:
		hook = Mutate
	default:
		return PolicySpec{}, nil, &wasmpolicy.InvalidError{Policy: wp.Name, Field: "spec.hook", Msg: fmt.Sprintf("%q is not an admission hook", wp.Spec.Hook)}
	}
	spec := PolicySpec{Spec: wp.ModuleSpec(), Args: wp.Settings()}
	if a := wp.Spec.Admission; a != nil {
		for _, r := range a.Rules {
			spec.Rules = append(spec.Rules, Rule{APIGroups: r.APIGroups, APIVersions: r.APIVersions, Resources: r.Resources, Operations: r.Operations})
		}
		spec.NamespaceSelector, spec.ObjectSelector = a.NamespaceSelector, a.ObjectSelector
		spec.ValidationActions, spec.Capabilities = a.ValidationActions, a.Capabilities
		spec.MatchConditions = a.MatchConditions
	}
	cfg := &Config{Policies: []PolicySpec{spec}}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			field := strings.TrimPrefix(ce.Field, "admission.policies[0].")
			return PolicySpec{}, nil, &wasmpolicy.InvalidError{Policy: wp.Name, Field: "spec.admission." + field, Msg: ce.Msg}
		}
		return PolicySpec{}, nil, err
	}
	return cfg.Policies[0], hook, nil
}

// inForce publishes the set's policies with their tier and mode.
func (o *Policies) inForce(ps *policySet) {
	var out []wasmpolicy.InForce
	for _, p := range ps.policies {
		e := wasmpolicy.InForce{Policy: p.spec.Name, Tier: wasmpolicy.TierFile, Mode: string(policyv1alpha1.ModeEnforce)}
		if p.hook != nil {
			e.Tier = wasmpolicy.TierAPI
		}
		if p.monitor {
			e.Mode = string(policyv1alpha1.ModeMonitor)
		}
		out = append(out, e)
	}
	o.shared.SetInForce(wasmpolicy.ComponentAPIServer, out)
}

// record is a Monitor policy's call: its would-be verdict, warnings, patch and audit
// annotations go to the audit annotations of the request and to
// wasmkube_policy_monitor_decisions_total; the request is neither refused nor changed.
func (p *Policy) record(a *admission.Attributes, c *Call, err error, elapsed time.Duration) {
	o := p.owner
	verdict, detail := wasmpolicy.VerdictAllow, ""
	switch {
	case err != nil:
		verdict, detail = wasmpolicy.VerdictError, err.Error()
	case c.Code == CodeDenied:
		verdict, detail = wasmpolicy.VerdictDeny, c.Reason
	case c.Patch != nil:
		verdict = wasmpolicy.VerdictPatch
	}
	o.shared.MonitorDecisions.WithLabelValues(p.spec.Name, verdict).Inc()
	o.metrics.duration.WithLabelValues(p.spec.Name, string(a.Operation), "false").Observe(elapsed.Seconds())
	value := verdict
	if detail != "" {
		value += ": " + detail
	}
	a.AddAuditAnnotation(p.spec.Name+"/monitor-verdict", value)
	if len(c.Warnings) > 0 {
		a.AddAuditAnnotation(p.spec.Name+"/monitor-warnings", strings.Join(c.Warnings, "\n"))
	}
	if c.Patch != nil {
		a.AddAuditAnnotation(p.spec.Name+"/monitor-patch", string(c.Patch))
	}
	for _, an := range c.AuditAnnotations {
		a.AddAuditAnnotation(p.spec.Name+"/"+an.Key, an.Value)
	}
	if verdict != wasmpolicy.VerdictAllow {
		o.log.Info("admission policy in Monitor mode would have decided otherwise", "policy", p.spec.Name, "verdict", verdict, "detail", detail,
			"operation", string(a.Operation), "resource", a.Resource.Resource, "namespace", a.Namespace, "name", a.Name)
	}
}
