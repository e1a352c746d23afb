package validation

import (
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	policyvalidation "github.com/wasmkube/wasmkube/core/apis/policy/validation"
)

// validateWasmPolicy checks a WasmPolicy (cluster-scoped): its metadata, spec and status.
func validateWasmPolicy(obj runtime.Object) (field.ErrorList, bool) {
	p, ok := obj.(*policyv1alpha1.WasmPolicy)
	if !ok {
		return nil, false
	}
	errs := objectMeta(&p.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, policyvalidation.ValidateSpec(&p.Spec, field.NewPath("spec"))...)
	return append(errs, policyvalidation.ValidateStatus(&p.Status, field.NewPath("status"))...), true
}

// validateWasmPolicyUpdate is validateWasmPolicy for an update of old to obj. Every spec
// field may change (a change is a new revision of the policy).
func validateWasmPolicyUpdate(obj, old runtime.Object) (field.ErrorList, bool) {
	errs, ok := validateWasmPolicy(obj)
	if !ok {
		return nil, false
	}
	return append(errs, metaUpdate(&obj.(*policyv1alpha1.WasmPolicy).ObjectMeta, &old.(*policyv1alpha1.WasmPolicy).ObjectMeta)...), true
}
