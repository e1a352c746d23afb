// Package v1alpha1 is wasmkube's built-in API group policy.wasmkube.io/v1alpha1: the
// cluster-scoped WasmPolicy, a wasm policy module with the hook it serves, declared through
// the API instead of a component's config file (docs/api-objects.md, "WasmPolicy").
//
// +k8s:deepcopy-gen=package
// +groupName=policy.wasmkube.io
package v1alpha1

//go:generate go run k8s.io/code-generator/cmd/deepcopy-gen@v0.37.2 --output-file zz_generated.deepcopy.go --go-header-file /dev/null .
