// Package v1alpha1 is the read-only API group explorer.wasmkube.io/v1alpha1: the decision
// records each component keeps in a bounded ring (scheduler attempts with their node x
// plugin matrix, admission requests with every policy's verdict, kubelet hook runs, and
// policy or config swaps), served by the API server under
// /apis/explorer.wasmkube.io/v1alpha1/ (docs/explorer.md, "API").
//
// The types are JSON only: no protobuf, no conversion, no storage. A record is never
// written to etcd; it lives in the memory of the component that made it (or, for the
// scheduler, of the API server it pushed it to) until its ring wraps.
package v1alpha1
