// Package cache is the scheduler's view of nodes and the pods on them: pods bound (from
// the informer) and assumed (decided but not yet bound). Every scheduling cycle works on
// a Snapshot, brought up to date incrementally: only NodeInfos whose generation moved
// since the last update are copied, as upstream does, so a cycle costs O(changed nodes),
// not O(cluster).
package cache

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// nodeItem is one entry of a list ordered by most recent change, so UpdateSnapshot can
// stop at the first entry it has already seen.
type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
}

type podState struct {
	pod      *v1.Pod
	assumed  bool
	finished bool // binding finished (assumed pods only)
}

// Cache holds nodes and pods. It is safe for concurrent use.
type Cache struct {
	mu    sync.RWMutex
	nodes map[string]*nodeItem
	head  *nodeItem
	pods  map[types.UID]*podState
	// order is the node names in the order they were added; the snapshot list
	// interleaves them by zone.
	order []string
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{nodes: map[string]*nodeItem{}, pods: map[types.UID]*podState{}}
}

func (c *Cache) moveToHead(it *nodeItem) {
	if c.head == it {
		return
	}
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	it.prev = nil
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *nodeItem) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

func (c *Cache) item(name string) *nodeItem {
	it, ok := c.nodes[name]
	if !ok {
		it = &nodeItem{info: framework.NewNodeInfo()}
		c.nodes[name] = it
	}
	return it
}

// AddNode adds or replaces a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.item(node.Name)
	if it.info.Node() == nil {
		c.order = append(c.order, node.Name)
	}
	it.info.SetNode(node)
	c.moveToHead(it)
}

// UpdateNode is AddNode.
func (c *Cache) UpdateNode(node *v1.Node) { c.AddNode(node) }

// RemoveNode removes a node. Its NodeInfo stays while pods are still on it (their
// deletion events come later), but it leaves the snapshot at once.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it, ok := c.nodes[name]
	if !ok {
		return
	}
	for i, n := range c.order {
		if n == name {
			c.order = append(c.order[:i], c.order[i+1:]...)
			break
		}
	}
	if len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, name)
		return
	}
	it.info.RemoveNode()
	c.moveToHead(it)
}

func (c *Cache) addPodLocked(pod *v1.Pod) {
	it := c.item(pod.Spec.NodeName)
	it.info.AddPod(pod)
	c.moveToHead(it)
}

func (c *Cache) removePodLocked(pod *v1.Pod) error {
	it, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("pod %s/%s: node %q is not in the cache", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	if err := it.info.RemovePod(pod); err != nil {
		return err
	}
	if it.info.Node() == nil && len(it.info.Pods) == 0 {
		c.unlink(it)
		delete(c.nodes, pod.Spec.NodeName)
		return nil
	}
	c.moveToHead(it)
	return nil
}

// AssumePod records that pod (with spec.nodeName set to the chosen node) will be bound,
// so the next cycles count its requests before the binding is seen.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("assume pod %s/%s: spec.nodeName is empty", pod.Namespace, pod.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[pod.UID]; ok {
		return fmt.Errorf("assume pod %s/%s: already in the cache", pod.Namespace, pod.Name)
	}
	c.addPodLocked(pod)
	c.pods[pod.UID] = &podState{pod: pod, assumed: true}
	return nil
}

// FinishBinding marks an assumed pod's binding as sent.
func (c *Cache) FinishBinding(pod *v1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok && ps.assumed {
		ps.finished = true
	}
}

// ForgetPod undoes AssumePod (the binding failed).
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok || !ps.assumed {
		return fmt.Errorf("forget pod %s/%s: not assumed", pod.Namespace, pod.Name)
	}
	delete(c.pods, pod.UID)
	return c.removePodLocked(ps.pod)
}

// IsAssumedPod reports whether the pod is assumed and not yet seen bound.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.pods[pod.UID]
	return ok && ps.assumed
}

// AddPod records a pod seen bound by the informer; it confirms an assumed pod.
func (c *Cache) AddPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.pods[pod.UID]; ok {
		if ps.assumed && ps.pod.Spec.NodeName == pod.Spec.NodeName {
			// Confirm: replace the assumed copy with the real object.
			if err := c.removePodLocked(ps.pod); err != nil {
				return err
			}
			c.addPodLocked(pod)
			c.pods[pod.UID] = &podState{pod: pod}
			return nil
		}
		if err := c.removePodLocked(ps.pod); err != nil {
			return err
		}
	}
	c.addPodLocked(pod)
	c.pods[pod.UID] = &podState{pod: pod}
	return nil
}

// UpdatePod replaces a bound pod.
func (c *Cache) UpdatePod(pod *v1.Pod) error { return c.AddPod(pod) }

// RemovePod removes a pod (deleted, or finished).
func (c *Cache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[pod.UID]
	if !ok {
		return nil
	}
	delete(c.pods, pod.UID)
	return c.removePodLocked(ps.pod)
}

// Counts returns the number of nodes (with a node object) and of pods, assumed ones
// included.
func (c *Cache) Counts() (nodes, pods int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.order), len(c.pods)
}

// NodeInfo returns a copy of one node's NodeInfo (for tests and debugging).
func (c *Cache) NodeInfo(name string) (*framework.NodeInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	it, ok := c.nodes[name]
	if !ok {
		return nil, false
	}
	return it.info.Clone(), true
}

// UpdateSnapshot brings s up to date with the cache, copying only the NodeInfos that
// changed since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	rebuild := false
	affinityChanged := false
	for it := c.head; it != nil && it.info.Generation > s.generation; it = it.next {
		name := ""
		if n := it.info.Node(); n != nil {
			name = n.Name
		}
		if name == "" {
			continue // a deleted node with pods left: not schedulable, handled below
		}
		clone := it.info.Clone()
		if existing, ok := s.nodeInfoMap[name]; ok {
			if (len(existing.PodsWithAffinity) > 0) != (len(clone.PodsWithAffinity) > 0) ||
				(len(existing.PodsWithRequiredAntiAffinity) > 0) != (len(clone.PodsWithRequiredAntiAffinity) > 0) {
				affinityChanged = true
			}
			*existing = *clone
		} else {
			s.nodeInfoMap[name] = clone
			rebuild = true
		}
	}
	if c.head != nil {
		s.generation = c.head.info.Generation
	}
	if len(s.nodeInfoMap) != len(c.order) {
		for name := range s.nodeInfoMap {
			if it, ok := c.nodes[name]; !ok || it.info.Node() == nil {
				delete(s.nodeInfoMap, name)
			}
		}
		rebuild = true
	}
	if rebuild {
		s.listVersion++
		s.nodeInfoList = s.nodeInfoList[:0]
		for _, name := range interleaveZones(c.order, c.nodes) {
			if ni, ok := s.nodeInfoMap[name]; ok {
				s.nodeInfoList = append(s.nodeInfoList, ni)
			}
		}
	}
	if rebuild || affinityChanged {
		s.havePodsWithAffinity = s.havePodsWithAffinity[:0]
		s.havePodsWithRequiredAntiAffinity = s.havePodsWithRequiredAntiAffinity[:0]
		for _, ni := range s.nodeInfoList {
			if len(ni.PodsWithAffinity) > 0 {
				s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
			}
			if len(ni.PodsWithRequiredAntiAffinity) > 0 {
				s.havePodsWithRequiredAntiAffinity = append(s.havePodsWithRequiredAntiAffinity, ni)
			}
		}
	}
}

// interleaveZones orders node names round-robin across zones (as upstream's node
// tree), so that a cycle that looks at only some of the nodes sees every zone.
func interleaveZones(order []string, nodes map[string]*nodeItem) []string {
	var zones []string
	byZone := map[string][]string{}
	for _, name := range order {
		it := nodes[name]
		if it == nil || it.info.Node() == nil {
			continue
		}
		z := zoneOf(it.info.Node())
		if _, ok := byZone[z]; !ok {
			zones = append(zones, z)
		}
		byZone[z] = append(byZone[z], name)
	}
	if len(zones) <= 1 {
		if len(zones) == 1 {
			return byZone[zones[0]]
		}
		return nil
	}
	out := make([]string, 0, len(order))
	for i := 0; len(out) < cap(out); i++ {
		progressed := false
		for _, z := range zones {
			if i < len(byZone[z]) {
				out = append(out, byZone[z][i])
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

func zoneOf(n *v1.Node) string {
	region := n.Labels[v1.LabelTopologyRegion]
	zone := n.Labels[v1.LabelTopologyZone]
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// Snapshot is a consistent view of the nodes for one scheduling cycle. It implements
// framework.NodeInfoLister.
type Snapshot struct {
	nodeInfoMap                      map[string]*framework.NodeInfo
	nodeInfoList                     []*framework.NodeInfo
	havePodsWithAffinity             []*framework.NodeInfo
	havePodsWithRequiredAntiAffinity []*framework.NodeInfo
	generation                       int64
	// listVersion moves whenever a node joins or leaves the list (a batch's ranking
	// covers the nodes of one version only).
	listVersion int64
}

// NewSnapshot returns an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*framework.NodeInfo{}}
}

// NewSnapshotFrom builds a snapshot from node infos (for tests and simulations).
func NewSnapshotFrom(infos ...*framework.NodeInfo) *Snapshot {
	s := NewSnapshot()
	for _, ni := range infos {
		s.nodeInfoMap[ni.Node().Name] = ni
		s.nodeInfoList = append(s.nodeInfoList, ni)
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinity = append(s.havePodsWithRequiredAntiAffinity, ni)
		}
	}
	return s
}

// List returns every node.
func (s *Snapshot) List() ([]*framework.NodeInfo, error) { return s.nodeInfoList, nil }

// Get returns one node.
func (s *Snapshot) Get(name string) (*framework.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[name]; ok && ni.Node() != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("node %q not found in the scheduler's snapshot", name)
}

// HavePodsWithAffinityList returns nodes with pods that have (anti-)affinity.
func (s *Snapshot) HavePodsWithAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithAffinity, nil
}

// HavePodsWithRequiredAntiAffinityList returns nodes with pods that have required
// anti-affinity.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]*framework.NodeInfo, error) {
	return s.havePodsWithRequiredAntiAffinity, nil
}

// ListVersion changes whenever a node is added to or removed from the snapshot; the
// NodeInfos of one version stay the same objects, updated in place.
func (s *Snapshot) ListVersion() int64 { return s.listVersion }

// NumNodes is the number of nodes.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }
