package apiserver

// pods/ephemeralcontainers, as upstream (pkg/registry/core/pod/storage's
// EphemeralContainersREST): GET returns the pod; PUT and PATCH take a pod of which only
// spec.ephemeralContainers is kept (store.go, updateEphemeral), checked by
// validation.ValidatePodEphemeralContainersUpdate (additions only). It is authorized as
// its own subresource, so a role needs pods/ephemeralcontainers to add a debug
// container; a node credential has no such rule (nodeauth.go). The kubelet starts what
// is added (kubelet/worker.go). The pods row of the resources table (registry/) lists the
// subresource; discovery names its verbs here.
func init() {
	d := subresourceDiscovery["ephemeralcontainers"]
	d.verbs = []string{"get", "patch", "update"}
	subresourceDiscovery["ephemeralcontainers"] = d
}
