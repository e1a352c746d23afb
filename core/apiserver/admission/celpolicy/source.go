package celpolicy

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Set is the policies and bindings in force.
type Set struct {
	Validating         []*admissionregistrationv1.ValidatingAdmissionPolicy
	ValidatingBindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	Mutating           []*admissionregistrationv1.MutatingAdmissionPolicy
	MutatingBindings   []*admissionregistrationv1.MutatingAdmissionPolicyBinding
}

// Source gives the policies in force; it is asked once per phase of a request.
type Source interface {
	Policies(ctx context.Context) (Set, error)
}

// Static is a fixed set (a test's, or a server's own).
type Static Set

// Policies implements Source.
func (s Static) Policies(context.Context) (Set, error) { return Set(s), nil }

// Served reads the policies and bindings the API server serves, from its watch cache.
type Served struct{ Reader admission.ObjectReader }

// Policies implements Source.
func (s Served) Policies(ctx context.Context) (Set, error) {
	var set Set
	if err := list(ctx, s.Reader, "validatingadmissionpolicies", &set.Validating); err != nil {
		return set, err
	}
	if err := list(ctx, s.Reader, "validatingadmissionpolicybindings", &set.ValidatingBindings); err != nil {
		return set, err
	}
	if err := list(ctx, s.Reader, "mutatingadmissionpolicies", &set.Mutating); err != nil {
		return set, err
	}
	if err := list(ctx, s.Reader, "mutatingadmissionpolicybindings", &set.MutatingBindings); err != nil {
		return set, err
	}
	return set, nil
}

func list[T any](ctx context.Context, r admission.ObjectReader, resource string, out *[]*T) error {
	if _, _, ok := r.Resource(resource); !ok {
		return nil // not served (yet): none
	}
	objs, err := r.List(ctx, resource, "")
	if err != nil {
		return fmt.Errorf("list %s: %w", resource, err)
	}
	for _, o := range objs {
		if t, ok := any(o).(*T); ok {
			*out = append(*out, t)
		}
	}
	return nil
}

var errNoReader = fmt.Errorf("admission policies: the API server has not handed its reader")
