package framework

import (
	"fmt"
	"maps"
	"strconv"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Upstream's defaults for containers that request nothing, used by scoring only
// (NonZeroRequested), so that best-effort pods still spread.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
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

// NewResource converts a ResourceList (requests or allocatable).
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds a ResourceList to r.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds v of the extended resource name.
func (r *Resource) AddScalar(name v1.ResourceName, v int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += v
}

// AddResource adds o to r.
func (r *Resource) AddResource(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, v)
	}
}

// SubResource subtracts o from r.
func (r *Resource) SubResource(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, -v)
	}
}

// SetMax raises every field of r to at least the matching field of o.
func (r *Resource) SetMax(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.AllowedPodNumber = max(r.AllowedPodNumber, o.AllowedPodNumber)
	for k, v := range o.ScalarResources {
		if v > r.ScalarResources[k] {
			if r.ScalarResources == nil {
				r.ScalarResources = map[v1.ResourceName]int64{}
			}
			r.ScalarResources[k] = v
		}
	}
}

// Clone returns a copy that shares nothing with r.
func (r Resource) Clone() Resource {
	c := r
	c.ScalarResources = maps.Clone(r.ScalarResources) // nil stays nil
	return c
}

// Get returns the amount of a named resource (cpu in millicores).
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.AllowedPodNumber
	default:
		return r.ScalarResources[name]
	}
}

// IsScalarResourceName reports whether name is an extended resource, a hugepage
// size or an attachable-volume count (everything the scheduler counts besides cpu,
// memory, ephemeral storage and pods).
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if len(s) > len(v1.ResourceHugePagesPrefix) && s[:len(v1.ResourceHugePagesPrefix)] == v1.ResourceHugePagesPrefix {
		return true
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			// Domain-prefixed names other than kubernetes.io/ are extended resources.
			prefix := s[:i]
			return prefix != "kubernetes.io" && !hasSuffix(prefix, ".kubernetes.io") || hasPrefix(s, "attachable-volumes-")
		}
	}
	return hasPrefix(s, "attachable-volumes-")
}

func hasPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }
func hasSuffix(s, p string) bool { return len(s) >= len(p) && s[len(s)-len(p):] == p }

// PodInfo is a pod with what the scheduler precomputes about it.
type PodInfo struct {
	Pod *v1.Pod
	// Requests is the effective request (max of init containers and the sum of app
	// containers, plus overhead), as upstream's resource helpers compute it.
	Requests Resource
	// NonZeroRequests is Requests with upstream's scoring defaults (100m cpu, 200Mi
	// memory) for containers that request nothing.
	NonZeroRequests Resource
	// Ports are the host ports the pod asks for.
	Ports []v1.ContainerPort
}

// NewPodInfo precomputes a pod's requests and host ports.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod}
	pi.Requests, pi.NonZeroRequests = PodRequests(pod)
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				pi.Ports = append(pi.Ports, p)
			}
		}
	}
	return pi
}

// HasAffinity reports whether the pod has required or preferred pod (anti-)affinity.
func (p *PodInfo) HasAffinity() bool {
	a := p.Pod.Spec.Affinity
	return a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil)
}

// HasRequiredAntiAffinity reports whether the pod has required pod anti-affinity.
func (p *PodInfo) HasRequiredAntiAffinity() bool {
	a := p.Pod.Spec.Affinity
	return a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

// PodRequests computes a pod's effective requests as upstream does: the sum of app
// containers (and restartable init containers, i.e. sidecars), raised to the largest
// single init container plus the sidecars started before it, plus pod overhead.
// The second result substitutes upstream's non-zero defaults for cpu and memory.
func PodRequests(pod *v1.Pod) (req, nonZero Resource) {
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i].Resources.Requests
		req.Add(*c)
		addNonZero(&nonZero, *c)
	}
	var sidecars, sidecarsNZ Resource
	var initMax, initMaxNZ Resource
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.Add(ic.Resources.Requests)
			addNonZero(&sidecarsNZ, ic.Resources.Requests)
			// A sidecar runs alongside the app containers.
			req.Add(ic.Resources.Requests)
			addNonZero(&nonZero, ic.Resources.Requests)
			continue
		}
		r := sidecars.Clone()
		r.Add(ic.Resources.Requests)
		initMax.SetMax(&r)
		rnz := sidecarsNZ.Clone()
		addNonZero(&rnz, ic.Resources.Requests)
		initMaxNZ.SetMax(&rnz)
	}
	req.SetMax(&initMax)
	nonZero.SetMax(&initMaxNZ)
	if pod.Spec.Overhead != nil {
		req.Add(pod.Spec.Overhead)
		nonZero.Add(pod.Spec.Overhead)
	}
	return req, nonZero
}

func addNonZero(r *Resource, rl v1.ResourceList) {
	if q, ok := rl[v1.ResourceCPU]; ok && !q.IsZero() {
		r.MilliCPU += q.MilliValue()
	} else {
		r.MilliCPU += DefaultMilliCPURequest
	}
	if q, ok := rl[v1.ResourceMemory]; ok && !q.IsZero() {
		r.Memory += q.Value()
	} else {
		r.Memory += DefaultMemoryRequest
	}
}

var generation atomic.Int64

// NextGeneration returns a new, process-wide increasing generation number.
func NextGeneration() int64 { return generation.Add(1) }

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

// NewNodeInfo returns a NodeInfo (without node) holding pods.
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	n := &NodeInfo{Generation: NextGeneration()}
	for _, p := range pods {
		n.AddPod(p)
	}
	return n
}

// Node returns the node (nil when the node was deleted but pods remain).
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node and recomputes Allocatable from its status.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.Allocatable = NewResource(node.Status.Allocatable)
	n.Generation = NextGeneration()
}

// RemoveNode clears the node; the NodeInfo lives on while pods remain on it.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.Generation = NextGeneration()
}

// AddPod adds a pod bound or assumed on the node.
func (n *NodeInfo) AddPod(pod *v1.Pod) { n.AddPodInfo(NewPodInfo(pod)) }

// AddPodInfo adds a pod whose PodInfo is already computed.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if pi.HasAffinity() {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if pi.HasRequiredAntiAffinity() {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
	n.Generation = NextGeneration()
}

// RemovePod removes the pod with pod's UID; it is an error if the pod is not there.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	uid := pod.UID
	n.PodsWithAffinity = removeFrom(n.PodsWithAffinity, uid)
	n.PodsWithRequiredAntiAffinity = removeFrom(n.PodsWithRequiredAntiAffinity, uid)
	for i, pi := range n.Pods {
		if pi.Pod.UID == uid {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(pi, -1)
			n.Generation = NextGeneration()
			return nil
		}
	}
	return fmt.Errorf("pod %s/%s (uid %s) is not on node %s", pod.Namespace, pod.Name, uid, n.nodeName())
}

func (n *NodeInfo) nodeName() string {
	if n.node == nil {
		return "<deleted>"
	}
	return n.node.Name
}

func removeFrom(s []*PodInfo, uid types.UID) []*PodInfo {
	for i, pi := range s {
		if pi.Pod.UID == uid {
			last := len(s) - 1
			s[i] = s[last]
			s[last] = nil
			return s[:last]
		}
	}
	return s
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	if sign > 0 {
		n.Requested.AddResource(&pi.Requests)
		n.NonZeroRequested.AddResource(&pi.NonZeroRequests)
	} else {
		n.Requested.SubResource(&pi.Requests)
		n.NonZeroRequested.SubResource(&pi.NonZeroRequests)
	}
	for _, p := range pi.Ports {
		k := PortKey(p.Protocol, p.HostIP, p.HostPort)
		if sign > 0 {
			if n.UsedPorts == nil {
				n.UsedPorts = map[string]struct{}{}
			}
			n.UsedPorts[k] = struct{}{}
		} else {
			delete(n.UsedPorts, k)
		}
	}
}

// PortKey is the UsedPorts key of a host port. An empty protocol means TCP and an
// empty host IP means 0.0.0.0, as in the API defaults.
func PortKey(protocol v1.Protocol, hostIP string, port int32) string {
	if protocol == "" {
		protocol = v1.ProtocolTCP
	}
	if hostIP == "" {
		hostIP = "0.0.0.0"
	}
	return string(protocol) + "/" + hostIP + "/" + strconv.Itoa(int(port))
}

// Clone returns a copy whose slices and maps can be changed without affecting n
// (the pods themselves are shared; they are read-only).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		node:             n.node,
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		Generation:       n.Generation,
	}
	if len(n.Pods) > 0 {
		c.Pods = append([]*PodInfo(nil), n.Pods...)
	}
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	if n.UsedPorts != nil {
		c.UsedPorts = make(map[string]struct{}, len(n.UsedPorts))
		for k := range n.UsedPorts {
			c.UsedPorts[k] = struct{}{}
		}
	}
	return c
}
