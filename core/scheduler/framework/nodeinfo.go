package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Resource is an amount of compute resources: cpu in millicores, memory and ephemeral
// storage in bytes, and pods as a count.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	AllowedPodNumber int64
	// ScalarResources holds extended resources by name.
	ScalarResources map[v1.ResourceName]int64
}

// PodInfo is a pod with what the scheduler precomputes about it.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is the effective request (max of init containers and the sum of app
	// containers, plus overhead), as upstream's resource helpers compute it.
	Requests Resource
}

// NodeInfo is a node with the pods bound or assumed on it and their sums.
// A NodeInfo in a snapshot is read-only for plugins.
type NodeInfo struct {
	node *v1.Node
	// Pods bound or assumed on the node.
	Pods []*PodInfo
	// PodsWithAffinity and PodsWithRequiredAntiAffinity are subsets of Pods.
	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	// UsedPorts are host ports in use: protocol/hostIP/port.
	UsedPorts map[string]struct{}
	// Requested is the sum of the pods' requests; NonZeroRequested uses upstream's
	// defaults (100m cpu, 200Mi memory) for containers that request nothing.
	Requested        Resource
	NonZeroRequested Resource
	// Allocatable is the node's status.allocatable.
	Allocatable Resource
	// Generation increases with every change, so caches keyed by it stay valid.
	Generation int64
}

// Node returns the node (nil when the node was deleted but pods remain).
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node; callers recompute Allocatable.
func (n *NodeInfo) SetNode(node *v1.Node) { n.node = node }
