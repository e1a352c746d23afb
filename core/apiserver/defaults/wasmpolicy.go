package defaults

import (
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// wasmPolicy sets a WasmPolicy's defaults (policyv1alpha1.SetDefaults); it reports whether
// obj is one.
func wasmPolicy(obj runtime.Object) bool {
	p, ok := obj.(*policyv1alpha1.WasmPolicy)
	if ok {
		policyv1alpha1.SetDefaults(p)
	}
	return ok
}
