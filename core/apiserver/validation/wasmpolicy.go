package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	policyvalidation "github.com/wasmkube/wasmkube/core/apis/policy/validation"
)

// validateWasmPolicy checks a WasmPolicy (cluster-scoped): its metadata, spec and status;
// and a WasmPolicyReport: its metadata, policy and component status.
func validateWasmPolicy(obj runtime.Object) (field.ErrorList, bool) {
	switch p := obj.(type) {
	case *policyv1alpha1.WasmPolicy:
		errs := objectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		errs = append(errs, policyvalidation.ValidateSpec(&p.Spec, field.NewPath("spec"))...)
		return append(errs, policyvalidation.ValidateStatus(&p.Status, field.NewPath("status"))...), true
	case *policyv1alpha1.WasmPolicyReport:
		errs := objectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
		return append(errs, policyvalidation.ValidateReport(p)...), true
	}
	return nil, false
}

// validateWasmPolicyUpdate is validateWasmPolicy for an update of old to obj. Every spec
// field of a policy may change (a change is a new revision of the policy); a report stays
// the report of one component on one policy.
func validateWasmPolicyUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateWasmPolicy(obj)
	if !ok {
		return nil, false
	}
	switch o := obj.(type) {
	case *policyv1alpha1.WasmPolicy:
		errs = append(errs, metaUpdate(&o.ObjectMeta, &old.(*policyv1alpha1.WasmPolicy).ObjectMeta)...)
	case *policyv1alpha1.WasmPolicyReport:
		was := old.(*policyv1alpha1.WasmPolicyReport)
		errs = append(errs, metaUpdate(&o.ObjectMeta, &was.ObjectMeta)...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Policy, was.Policy, field.NewPath("policy"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Status.Name, was.Status.Name, field.NewPath("status", "name"))...)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(o.Status.Component, was.Status.Component, field.NewPath("status", "component"))...)
	}
	return errs, true
}
