package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of wasmkube's policy objects.
const GroupName = "policy.wasmkube.io"

// SchemeGroupVersion is the group and version of this package's kinds.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Resource is the group-qualified resource of a name in this version ("wasmpolicies").
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// AddToScheme registers WasmPolicy, WasmPolicyReport and their lists, as k8s.io/api's packages do.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &WasmPolicy{}, &WasmPolicyList{}, &WasmPolicyReport{}, &WasmPolicyReportList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
