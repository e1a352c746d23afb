// Package admitwasm makes wasm modules admission policies of the API server (ABI v1,
// docs/abi.md sections 4.6 and 8): a module exporting wasmkube_mutate runs in the
// mutating phase, one exporting wasmkube_validate in the validating phase, matched by
// the rules, namespace and object selectors of its `admission:` config, with its
// failurePolicy and validationActions applied to what it returns.
//
// Extension is the admission part of a wasmhost.Host; Call is one entry-point call;
// Smoke checks a loaded module with a synthetic request. Policies swaps the whole set
// of policies atomically when the config file changes (docs/plugins.md, "Admission").
package admitwasm
