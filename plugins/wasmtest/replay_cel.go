package wasmtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/admission/celpolicy"
	"github.com/wasmkube/wasmkube/core/apiserver/defaults"
)

// AdmissionSet is what a replay runs requests through, in the API server's order: wasm
// policies (*admitwasm.Policies, from a config's admission: section) or CEL policies
// (CELPolicies, from a file of ValidatingAdmissionPolicies and MutatingAdmissionPolicies).
type AdmissionSet interface {
	Plugins() ([]admission.MutationInterface, []admission.ValidationInterface)
	SetObjectReader(admission.ObjectReader) error
}

// IsCELPolicies reports whether data is a file of admissionregistration.k8s.io objects
// rather than a wasmkube config.
func IsCELPolicies(data []byte) bool {
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); err != nil {
			return false
		}
		if len(u.Object) > 0 {
			return u.GroupVersionKind().Group == admissionregistrationv1.GroupName
		}
	}
}

// CELPolicies loads the ValidatingAdmissionPolicies, MutatingAdmissionPolicies and their
// bindings of a YAML file (several documents) for a replay, defaulted and compiled as the
// API server does; a policy whose CEL does not compile is an error naming it and the
// field. Each policy is one step of the replay, named "ValidatingAdmissionPolicy/<name>"
// or "MutatingAdmissionPolicy/<name>", and run by upstream's CEL admission libraries
// (core/apiserver/admission/celpolicy); params are read from the recorded objects.
func CELPolicies(file string, data []byte) (AdmissionSet, error) {
	var set celpolicy.Set
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for n := 1; ; n++ {
		var u unstructured.Unstructured
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, n, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		var obj runtime.Object
		switch u.GroupVersionKind() {
		case admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"):
			obj = &admissionregistrationv1.ValidatingAdmissionPolicy{}
		case admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicyBinding"):
			obj = &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		case admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicy"):
			obj = &admissionregistrationv1.MutatingAdmissionPolicy{}
		case admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingAdmissionPolicyBinding"):
			obj = &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
		default:
			return nil, fmt.Errorf("%s: document %d: %s %q is not a ValidatingAdmissionPolicy, MutatingAdmissionPolicy or binding (admissionregistration.k8s.io/v1)",
				file, n, u.GetObjectKind().GroupVersionKind(), u.GetName())
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", file, u.GetKind(), u.GetName(), err)
		}
		defaults.Default(obj)
		if errs := celpolicy.CompileErrors(obj); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %s %q: %w", file, u.GetKind(), u.GetName(), errs.ToAggregate())
		}
		switch o := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			set.Validating = append(set.Validating, o)
		case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
			set.ValidatingBindings = append(set.ValidatingBindings, o)
		case *admissionregistrationv1.MutatingAdmissionPolicy:
			set.Mutating = append(set.Mutating, o)
		case *admissionregistrationv1.MutatingAdmissionPolicyBinding:
			set.MutatingBindings = append(set.MutatingBindings, o)
		}
	}
	if len(set.Validating) == 0 && len(set.Mutating) == 0 {
		return nil, fmt.Errorf("%s: no ValidatingAdmissionPolicy or MutatingAdmissionPolicy", file)
	}
	c := &celSet{}
	for _, p := range set.Mutating {
		one := celpolicy.Static{Mutating: []*admissionregistrationv1.MutatingAdmissionPolicy{p}}
		for _, b := range set.MutatingBindings {
			if b.Spec.PolicyName == p.Name {
				one.MutatingBindings = append(one.MutatingBindings, b)
			}
		}
		step := celStep{name: "MutatingAdmissionPolicy/" + p.Name, p: celpolicy.New(celpolicy.Config{Source: one, Default: defaults.Default})}
		c.steps = append(c.steps, step)
		c.m = append(c.m, step)
	}
	for _, p := range set.Validating {
		one := celpolicy.Static{Validating: []*admissionregistrationv1.ValidatingAdmissionPolicy{p}}
		for _, b := range set.ValidatingBindings {
			if b.Spec.PolicyName == p.Name {
				one.ValidatingBindings = append(one.ValidatingBindings, b)
			}
		}
		step := celStep{name: "ValidatingAdmissionPolicy/" + p.Name, p: celpolicy.New(celpolicy.Config{Source: one, Default: defaults.Default})}
		c.steps = append(c.steps, step)
		c.v = append(c.v, step)
	}
	return c, nil
}

type celSet struct {
	steps []celStep
	m     []admission.MutationInterface
	v     []admission.ValidationInterface
}

func (c *celSet) Plugins() ([]admission.MutationInterface, []admission.ValidationInterface) {
	return c.m, c.v
}

func (c *celSet) SetObjectReader(r admission.ObjectReader) error {
	for _, s := range c.steps {
		if err := s.p.SetObjectReader(r); err != nil {
			return err
		}
	}
	return nil
}

// celStep is one policy, named for the report.
type celStep struct {
	name string
	p    *celpolicy.Policies
}

func (s celStep) Name() string { return s.name }

func (s celStep) Admit(ctx context.Context, a *admission.Attributes) error { return s.p.Admit(ctx, a) }

func (s celStep) Validate(ctx context.Context, a *admission.Attributes) error {
	return s.p.Validate(ctx, a)
}
