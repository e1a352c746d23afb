// Package wasmpolicy makes a component (an API server's admission, a scheduler, a kubelet)
// load the WasmPolicies that target it: an informer on policy.wasmkube.io/v1alpha1
// WasmPolicies, a selection by hook and placement (plan), a module resolved from a file or an
// OCI registry (plugins/wasmoci), and the set handed to the component's own swap path, which
// keeps the last good revision on any failure. Each phase change is reported to a StatusSink.
// See docs/wasmpolicy.md.
package wasmpolicy

import (
	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// Component names, as ComponentStatus.Component carries them.
const (
	ComponentAPIServer = "apiserver"
	ComponentScheduler = "scheduler"
	ComponentKubelet   = "kubelet"
)

// StatusSink receives one component's status for a policy on every phase change (Pending,
// Fetching, Active, Failed), with the generation and digest it speaks of. Observe must not
// block for long: it is called from the component's reconcile loop. The sink writes it to the
// API (plugins/wasmpolicy/report); the loader never writes status itself.
type StatusSink interface {
	Observe(policy string, s policyv1alpha1.ComponentStatus)
}

// NopSink drops every observation: the default when a component is started without a sink.
type NopSink struct{}

// Observe does nothing.
func (NopSink) Observe(string, policyv1alpha1.ComponentStatus) {}
