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
}

// MutationInterface is a plugin that may change the object.
type MutationInterface interface {
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin that accepts or refuses the final object.
type ValidationInterface interface {
	Validate(ctx context.Context, a *Attributes) error
}

// Plugin is a MutationInterface, a ValidationInterface, or both.
type Plugin = any

// Chain runs mutating plugins then validating plugins.
type Chain struct {
	mutators   []MutationInterface
	validators []ValidationInterface
}

// NewChain builds a chain from plugins in order; each must implement MutationInterface,
// ValidationInterface or both.
func NewChain(plugins ...Plugin) (*Chain, error) {
	c := &Chain{}
	for i, p := range plugins {
		m, isM := p.(MutationInterface)
		v, isV := p.(ValidationInterface)
		if !isM && !isV {
			return nil, fmt.Errorf("admission plugin %d (%T) implements neither Admit nor Validate", i, p)
		}
		if isM {
			c.mutators = append(c.mutators, m)
		}
		if isV {
			c.validators = append(c.validators, v)
		}
	}
	return c, nil
}

// Admit runs every mutating plugin, then every validating plugin.
func (c *Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, m := range c.mutators {
		if err := m.Admit(ctx, a); err != nil {
			return asStatus(a, err)
		}
	}
	for _, v := range c.validators {
		if err := v.Validate(ctx, a); err != nil {
			return asStatus(a, err)
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
