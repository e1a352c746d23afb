package admitwasm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Policy is one loaded wasm admission policy: an admission.MutationInterface and
// admission.ValidationInterface that runs the module's wasmkube_mutate or
// wasmkube_validate on the requests its rules and selectors match. The chain cannot tell
// it from a built-in plugin.
type Policy struct {
	spec PolicySpec
	key  string // declaration and module bytes: a reload that changes neither keeps the policy
	pool *wasmhost.Pool
	// loaded closes the pool and the module when the last policy set holding the policy
	// lets go (docs/plugins.md, "Lifetimes").
	loaded  *wasmhost.Loaded
	match   matcher
	deny    bool
	warn    bool
	audit   bool
	timeout time.Duration
	owner   *Policies
	// hook is the one kind an API-tier policy serves (nil: a file policy serves every kind
	// its module exports); monitor: its verdicts are recorded, never applied.
	hook    *wasmhost.Kind
	monitor bool
	// digest is the sha256 of the module's bytes, by which the decision explorer names it;
	// wasm is the module as its records show it, one value shared by all of them.
	digest string
	wasm   *explorerv1.Module
}

// Name is the policy's name.
func (p *Policy) Name() string { return p.spec.Name }

// Kinds are the admission entry points its module exports.
func (p *Policy) Kinds() wasmhost.Kinds { return p.pool.Module().Kinds().Intersect(Kinds) }

// Admit implements admission.MutationInterface: the module's wasmkube_mutate, its patch
// applied to the object in place.
func (p *Policy) Admit(ctx context.Context, a *admission.Attributes) error {
	return p.run(ctx, Mutate, a)
}

// Validate implements admission.ValidationInterface: the module's wasmkube_validate.
func (p *Policy) Validate(ctx context.Context, a *admission.Attributes) error {
	return p.run(ctx, Validate, a)
}

// stateKey files a request's shared serialized forms in admission.Attributes.
type stateKey struct{}

func requestOf(a *admission.Attributes) *Request {
	if r, ok := a.State(stateKey{}).(*Request); ok {
		return r
	}
	r := NewRequest(a)
	a.SetState(stateKey{}, r)
	return r
}

func (p *Policy) run(ctx context.Context, k *wasmhost.Kind, a *admission.Attributes) (err error) {
	o := p.owner
	if !p.pool.Module().Kinds().Has(k) {
		return nil
	}
	if ok, err := p.match.matches(ctx, a, o.namespaceLabels); err != nil {
		p.recordSkip(a, k, "matchConditions: "+err.Error())
		if p.monitor {
			return nil // a policy in Monitor never refuses
		}
		return matchConditionRefusal(p.spec.Name, err)
	} else if !ok {
		p.recordSkip(a, k, "rules, namespaceSelector, objectSelector or matchConditions")
		return nil
	}
	req := requestOf(a)
	// Waiting for a free instance counts against the request too: with every instance
	// busy, a call gives up after twice its time limit (and a margin for a call that
	// cannot be interrupted, such as a large memory.grow) instead of queueing without end.
	// The call itself ends at its own limit.
	giveUp := 2*p.timeout + 500*time.Millisecond
	c := &Call{Kind: k, Attributes: a, Reader: o.reader(), Capabilities: p.spec.Capabilities, Wait: giveUp}
	start := time.Now()
	cerr := c.Do(ctx, p.pool, req)
	elapsed := time.Since(start)
	defer func() { p.recordCall(a, k, c, cerr, err, elapsed) }()
	err = cerr
	if p.monitor {
		p.record(a, c, err, elapsed)
		return nil
	}
	for _, w := range c.Warnings {
		a.AddWarning(w)
	}
	for _, an := range c.AuditAnnotations {
		a.AddAuditAnnotation(p.spec.Name+"/"+an.Key, an.Value)
		o.log.Info("admission audit annotation", "policy", p.spec.Name, "key", p.spec.Name+"/"+an.Key, "value", an.Value,
			"operation", string(a.Operation), "resource", a.Resource.Resource, "namespace", a.Namespace, "name", a.Name, "uid", string(req.UID()))
	}
	op := string(a.Operation)
	if err != nil {
		var ce *wasmhost.CallError
		if errors.As(err, &ce) && ce.Reason == wasmhost.ReasonCanceled && ctx.Err() != nil {
			// The client gave up or the request timed out: not the policy's failure.
			o.metrics.observe(p.spec.Name, op, true, elapsed)
			return apierrors.NewTimeoutError(fmt.Sprintf("admission policy %s: request ended while the policy ran", p.spec.Name), 1)
		}
		why := err.Error()
		if errors.As(err, &ce) {
			why = fmt.Sprintf("%s: %v", ce.Reason, ce.Err)
			if ce.Reason == wasmhost.ReasonCanceled {
				why = fmt.Sprintf("no result within %s: all %d instances were busy, or the call overran its limit of %s", giveUp, p.pool.Size(), p.timeout)
				p.pool.CountFailure(k)
			}
		}
		if p.spec.FailurePolicy == Ignore {
			o.metrics.observe(p.spec.Name, op, false, elapsed)
			o.log.Warn("admission policy failed; ignored (failurePolicy: Ignore)", "policy", p.spec.Name, "kind", k.Name, "err", why)
			return nil
		}
		o.metrics.observe(p.spec.Name, op, true, elapsed)
		return apierrors.NewInternalError(fmt.Errorf("admission policy %s failed: %s", p.spec.Name, why))
	}
	if c.Code == CodeDenied {
		o.metrics.observe(p.spec.Name, op, p.deny, elapsed)
		return p.denied(a, c.Reason)
	}
	o.metrics.observe(p.spec.Name, op, false, elapsed)
	if c.Patched != nil {
		// Mutating plugins change the request's object in place (the store holds it).
		a.BeforeMutation()
		reflect.ValueOf(a.Object).Elem().Set(reflect.ValueOf(c.Patched).Elem())
		req.Forget()
	}
	return nil
}

// denied applies the policy's validation actions to a denial with reason.
func (p *Policy) denied(a *admission.Attributes, reason string) error {
	o := p.owner
	if reason == "" {
		reason = "denied by the policy (no reason given)"
	}
	if p.warn {
		o.metrics.rejections.WithLabelValues(p.spec.Name, Warn).Inc()
		a.AddWarning(fmt.Sprintf("admission policy %s: %s", p.spec.Name, reason))
	}
	if p.audit {
		o.metrics.rejections.WithLabelValues(p.spec.Name, Audit).Inc()
		a.AddAuditAnnotation(p.spec.Name+"/validation-failure", reason)
		o.log.Warn("admission policy violation (audit)", "policy", p.spec.Name, "operation", string(a.Operation),
			"resource", a.Resource.Resource, "namespace", a.Namespace, "name", a.Name, "user", a.User.Name, "reason", reason, "dryRun", a.DryRun)
		if !a.DryRun {
			o.event(involved(a), v1.EventTypeWarning, "PolicyViolation", fmt.Sprintf("admission policy %s (audit): %s", p.spec.Name, reason))
		}
	}
	if !p.deny {
		return nil
	}
	o.metrics.rejections.WithLabelValues(p.spec.Name, Deny).Inc()
	return denial(a, p.spec.Name, reason)
}

// fieldReason is a reason that starts with a field path and a colon.
var fieldReason = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[[^\]\s]+\])+):\s*(.*)$`)

// denial is the API status of a denial: 403 Forbidden with the policy's message, or 422
// Invalid naming the field when the reason starts with a field path (docs/abi.md 4.6);
// a reason of several lines, each with its field path, names each field.
func denial(a *admission.Attributes, policy, reason string) error {
	msg := fmt.Sprintf("admission policy %s denied the request: %s", policy, reason)
	details := &metav1.StatusDetails{Name: a.Name, Group: a.Resource.Group, Kind: a.Resource.Resource}
	lines := strings.Split(reason, "\n")
	if fieldReason.MatchString(lines[0]) {
		details.Kind = a.Kind.Kind
		// kubectl prints an Invalid status from its causes, so each cause names the policy.
		for _, l := range lines {
			c := metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: fmt.Sprintf("admission policy %s denied the request: %s", policy, l)}
			if m := fieldReason.FindStringSubmatch(l); m != nil {
				c.Field, c.Message = m[1], fmt.Sprintf("admission policy %s denied the request: %s", policy, m[2])
			}
			details.Causes = append(details.Causes, c)
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity,
			Reason: metav1.StatusReasonInvalid, Message: msg, Details: details}}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason: metav1.StatusReasonForbidden, Message: msg, Details: details}}
}

// involved is the object an audit Event is about.
func involved(a *admission.Attributes) *v1.ObjectReference {
	ref := &v1.ObjectReference{APIVersion: a.Kind.GroupVersion().String(), Kind: a.Kind.Kind, Namespace: a.Namespace, Name: a.Name}
	for _, o := range []any{a.Object, a.OldObject} {
		if m := metaOfAny(o); m != nil {
			ref.UID = m.GetUID()
			break
		}
	}
	return ref
}

func metaOfAny(o any) metav1.Object {
	m, ok := o.(metav1.Object)
	if !ok || reflect.ValueOf(m).IsNil() {
		return nil
	}
	return m
}

// newPolicy loads one declared policy: its module compiled and checked, a pool with its
// args, smoke-called.
func (o *Policies) newPolicy(ctx context.Context, spec PolicySpec, path string, bin []byte, key string) (*Policy, error) {
	lerr := func(err error) error { return &wasmhost.LoadError{Plugin: spec.Name, Path: spec.Path, Err: err} }
	imports, err := wasmImports(bin)
	if err != nil {
		return nil, lerr(err)
	}
	if len(spec.Capabilities) == 0 {
		for _, im := range imports {
			if im[0] == wasmhost.HostModule && (im[1] == "get_object" || im[1] == "list_objects") {
				return nil, lerr(fmt.Errorf("imports wasmkube.%s, which needs capability: list the resources the policy may read under its capabilities (for example capabilities: [namespaces])", im[1]))
			}
		}
	}
	if r := o.reader(); r != nil {
		for i, res := range spec.Capabilities {
			if _, _, ok := r.Resource(res); !ok {
				return nil, &ConfigError{Field: fmt.Sprintf("capabilities[%d]", i), Msg: fmt.Sprintf("%q is not a resource this API server serves", res)}
			}
		}
	}
	lo := wasmhost.LoadOptions{Name: spec.Name, Path: path, Wasm: bin, Timeout: spec.Timeout.Duration, MemoryLimit: spec.MemoryBytes()}
	if len(spec.Capabilities) > 0 {
		lo.Capabilities = []string{CapabilityObjects}
	}
	mod, err := o.opts.Host.Load(ctx, lo)
	if err != nil {
		return nil, err
	}
	if len(mod.Kinds().Intersect(Kinds)) == 0 {
		_ = mod.Close(ctx)
		return nil, lerr(errors.New("exports neither wasmkube_validate nor wasmkube_mutate: not an admission policy"))
	}
	var args []byte
	if len(spec.Args) > 0 && string(spec.Args) != "null" {
		args = spec.Args
	}
	loaded := wasmhost.NewLoaded(mod)
	pool, err := loaded.NewPool(ctx, args, spec.Pool)
	if err != nil {
		loaded.Close()
		return nil, err
	}
	if err := Smoke(ctx, pool); err != nil {
		loaded.Close()
		return nil, lerr(err)
	}
	p := &Policy{spec: spec, key: key, pool: pool, loaded: loaded, match: newMatcher(&spec), timeout: mod.Timeout(), owner: o, digest: moduleDigest(bin),
		deny: slices.Contains(spec.ValidationActions, Deny), warn: slices.Contains(spec.ValidationActions, Warn),
		audit: slices.Contains(spec.ValidationActions, Audit)}
	p.wasm = &explorerv1.Module{Path: spec.Path, Digest: p.digest}
	return p, nil
}

// namespaceLabels reads a namespace's labels from the API server's cache; a namespace
// that cannot be read has none.
func (o *Policies) namespaceLabels(ctx context.Context, ns string) labels.Set {
	r := o.reader()
	if r == nil {
		return nil
	}
	obj, err := r.Get(ctx, "namespaces", "", ns)
	if err != nil {
		return nil
	}
	if m := metaOfAny(obj); m != nil {
		return m.GetLabels()
	}
	return nil
}
