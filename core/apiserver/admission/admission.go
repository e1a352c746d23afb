// Package admission is the API server's admission chain: every create, update and delete
// passes through the mutating plugins, in order, and then through the validating plugins,
// in order, before anything is written. The first error stops the request; nothing is
// stored. Built-in plugins live here; wasm admission policies implement the same two
// interfaces and are appended by the caller (apiserver.Options.Admission).
package admission

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is the kind of write being admitted.
type Operation string

// Operations, spelled as in Kubernetes' AdmissionReview.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// UserInfo is the authenticated caller.
type UserInfo struct {
	Name   string
	Groups []string
}

// InGroup reports whether the user belongs to group.
func (u UserInfo) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Attributes describe one request under admission.
type Attributes struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	Name        string
	// Object is the new object (nil on Delete). Mutating plugins change it in place.
	Object runtime.Object
	// OldObject is the stored object (nil on Create).
	OldObject runtime.Object
	User      UserInfo
	DryRun    bool

	// Warnings are sent to the client as Warning headers (kubectl prints "Warning: ..."),
	// whether or not the request is admitted.
	Warnings []string
	// AuditAnnotations are recorded with the request (keys are "<plugin>/<key>").
	AuditAnnotations map[string]string

	state map[any]any
	// trace collects the decision explorer's record (record.go); nil when not recording.
	trace *trace
	// reinvoke: a mutating plugin changed the object after another one that asked to be
	// reinvoked had run (upstream's ReinvocationContext); reinvoking: the chain's second
	// mutating pass is under way.
	reinvoke, reinvoking bool
}

// RequestReinvocation asks the chain for a second mutating pass once the first ends,
// as upstream's SetShouldReinvoke: a mutating webhook (or policy) changed the object, so
// the plugins before it, and those after it that asked for it, see the change.
func (a *Attributes) RequestReinvocation() { a.reinvoke = true }

// ReinvocationRequested reports whether a plugin asked for a second mutating pass.
func (a *Attributes) ReinvocationRequested() bool { return a.reinvoke }

// IsReinvocation reports whether this is the chain's second mutating pass: built-in
// plugins and wasm policies run again, webhooks and mutating admission policies only
// when their reinvocationPolicy is IfNeeded and the object changed since they ran.
func (a *Attributes) IsReinvocation() bool { return a.reinvoking }

// AddWarning adds a warning for the client.
func (a *Attributes) AddWarning(w string) { a.Warnings = append(a.Warnings, w) }

// AddAuditAnnotation records key=value with the request.
func (a *Attributes) AddAuditAnnotation(key, value string) {
	if a.AuditAnnotations == nil {
		a.AuditAnnotations = map[string]string{}
	}
	a.AuditAnnotations[key] = value
}

// State returns what a plugin stored under key for this request (nil if nothing): the
// way a plugin carries work from its Admit to its Validate, or between its policies.
func (a *Attributes) State(key any) any { return a.state[key] }

// SetState stores v under key for the rest of this request's admission.
func (a *Attributes) SetState(key, v any) {
	if a.state == nil {
		a.state = map[any]any{}
	}
	a.state[key] = v
}

// MutationInterface is a plugin that may change the object.
type MutationInterface interface {
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin that accepts or refuses the final object.
type ValidationInterface interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Plugin is a MutationInterface, a ValidationInterface, both, or a Source.
type Plugin = any

// Source is a set of plugins that changes at run time (the wasm policies, swapped by an
// edit of the config file). The chain asks it once per request, before the first
// mutating plugin, and runs that one answer's mutators and validators in the source's
// place in each phase: a request never sees half of an old set and half of a new one.
type Source interface {
	Plugins() (mutators []MutationInterface, validators []ValidationInterface)
}

// LeasedSource is a Source whose answer stays usable until the chain calls release at the
// end of the request: a swap meanwhile closes nothing the request may still call (the
// wasm policies close a replaced set's modules after its last request).
type LeasedSource interface {
	Source
	AcquirePlugins() (mutators []MutationInterface, validators []ValidationInterface, release func())
}

// ObjectReader reads objects from the API server's watch cache (no etcd read), for
// plugins that decide from other objects (a namespace's labels, the configmaps of the
// request's namespace). Resources are named by their plural (namespaces, configmaps);
// the namespace is ignored for cluster-scoped ones. Objects are shared: read-only.
type ObjectReader interface {
	// Resource tells the kind of a resource and whether it is namespaced; ok is false
	// for a resource the server does not serve.
	Resource(resource string) (gvk schema.GroupVersionKind, namespaced, ok bool)
	// Get returns the object, or an error wrapping ErrNotFound.
	Get(ctx context.Context, resource, namespace, name string) (runtime.Object, error)
	// List returns the objects of the namespace (all of them for a cluster-scoped
	// resource), sorted by name.
	List(ctx context.Context, resource, namespace string) ([]runtime.Object, error)
}

// ErrNotFound is wrapped by ObjectReader.Get for an object that does not exist.
var ErrNotFound = errors.New("object not found")

// WantsObjectReader is a plugin that reads other objects; the API server hands it its
// reader before serving (upstream's plugin initializers do the same with informers). An
// error (the plugin's config names a resource the server does not serve) stops the
// server from starting.
type WantsObjectReader interface {
	SetObjectReader(ObjectReader) error
}

// Chain runs mutating plugins then validating plugins.
type Chain struct {
	steps []step
	rec   *Recorder
}

// step is one plugin of the chain, or a Source.
type step struct {
	m   MutationInterface
	v   ValidationInterface
	src Source
}

// NewChain builds a chain from plugins in order; each must implement MutationInterface,
// ValidationInterface, both, or Source.
func NewChain(plugins ...Plugin) (*Chain, error) {
	c := &Chain{}
	for i, p := range plugins {
		if src, ok := p.(Source); ok {
			c.steps = append(c.steps, step{src: src})
			continue
		}
		m, isM := p.(MutationInterface)
		v, isV := p.(ValidationInterface)
		if !isM && !isV {
			return nil, fmt.Errorf("admission plugin %d (%T) implements neither Admit nor Validate", i, p)
		}
		c.steps = append(c.steps, step{m: m, v: v})
	}
	return c, nil
}

// Admit runs every mutating plugin, then every validating plugin; the first refusal
// stops the request. When a mutating plugin asked for it (Attributes.RequestReinvocation),
// the mutating phase runs a second time before validation, as upstream's reinvocation:
// at most once, so two plugins that undo each other cannot loop.
func (c *Chain) Admit(ctx context.Context, a *Attributes) (err error) {
	if c.rec != nil {
		c.rec.begin(a)
		defer func() { c.rec.finish(a, err) }()
	}
	type snapshot struct {
		m []MutationInterface
		v []ValidationInterface
	}
	var snaps []snapshot
	for _, s := range c.steps {
		if ls, ok := s.src.(LeasedSource); ok {
			m, v, release := ls.AcquirePlugins()
			defer release()
			snaps = append(snaps, snapshot{m, v})
		} else if s.src != nil {
			m, v := s.src.Plugins()
			snaps = append(snaps, snapshot{m, v})
		}
	}
	mutate := func() error {
		n := 0
		for _, s := range c.steps {
			switch {
			case s.src != nil:
				for _, m := range snaps[n].m {
					if err := m.Admit(ctx, a); err != nil {
						return asStatus(a, err)
					}
				}
				n++
			case s.m != nil:
				if err := s.m.Admit(ctx, a); err != nil {
					return asStatus(a, err)
				}
			}
		}
		return nil
	}
	if err := mutate(); err != nil {
		return err
	}
	if a.reinvoke {
		a.reinvoking = true
		if err := mutate(); err != nil {
			return err
		}
	}
	n := 0
	for _, s := range c.steps {
		switch {
		case s.src != nil:
			for _, v := range snaps[n].v {
				if err := v.Validate(ctx, a); err != nil {
					return asStatus(a, err)
				}
			}
			n++
		case s.v != nil:
			if err := s.v.Validate(ctx, a); err != nil {
				return asStatus(a, err)
			}
		}
	}
	return nil
}

// asStatus keeps errors that already carry an API status (422 Invalid, 404...) and turns
// every other refusal into 403 Forbidden naming the object and the reason.
func asStatus(a *Attributes, err error) error {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return err
	}
	gr := a.Resource.GroupResource()
	return apierrors.NewForbidden(gr, a.Name, err)
}

// Forbidden returns a 403 refusal for the object under admission.
func Forbidden(a *Attributes, reason string) error {
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New(reason))
}
