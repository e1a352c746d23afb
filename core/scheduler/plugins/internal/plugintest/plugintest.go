// Package plugintest builds nodes, pods and snapshots for the built-in plugins' tests.
package plugintest

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Node is a node with cpu, memory and 110 pods allocatable, and labels as pairs.
func Node(name, cpu, mem string, lbl ...string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.LabelHostname: name}}}
	for i := 0; i+1 < len(lbl); i += 2 {
		n.Labels[lbl[i]] = lbl[i+1]
	}
	n.Status.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem), v1.ResourcePods: resource.MustParse("110")}
	return n
}

// Pod is a pod in namespace "default" with one container requesting cpu and memory
// (empty strings request nothing) and labels as pairs.
func Pod(name, cpu, mem string, lbl ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name), Labels: map[string]string{}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	rl := v1.ResourceList{}
	if cpu != "" {
		rl[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[v1.ResourceMemory] = resource.MustParse(mem)
	}
	p.Spec.Containers[0].Resources.Requests = rl
	for i := 0; i+1 < len(lbl); i += 2 {
		p.Labels[lbl[i]] = lbl[i+1]
	}
	return p
}

// On returns a copy of p bound to node.
func On(p *v1.Pod, node string) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.NodeName = node
	return p
}

// NodeInfo is a NodeInfo for node holding pods.
func NodeInfo(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(n)
	return ni
}

// Snapshot places pods (with spec.nodeName set) on nodes.
func Snapshot(nodes []*v1.Node, pods ...*v1.Pod) *cache.Snapshot {
	c := cache.New()
	for _, n := range nodes {
		c.AddNode(n)
	}
	for _, p := range pods {
		if err := c.AddPod(p); err != nil {
			panic(err)
		}
	}
	s := cache.NewSnapshot()
	c.UpdateSnapshot(s)
	return s
}

// Handle is a framework.Handle over a snapshot, without an API client.
type Handle struct{ S *cache.Snapshot }

// SnapshotSharedLister implements framework.Handle.
func (h Handle) SnapshotSharedLister() framework.NodeInfoLister { return h.S }

// ClientSet implements framework.Handle.
func (h Handle) ClientSet() kubernetes.Interface { return nil }

// Parallelism implements framework.Handle.
func (h Handle) Parallelism() int { return 1 }

// ScoreAll runs PreScore (if any), Score and NormalizeScore (if any) of p over every
// node of the snapshot, and returns the final scores by node name.
func ScoreAll(ctx context.Context, p framework.ScorePlugin, state *framework.CycleState, pod *v1.Pod, s *cache.Snapshot) (map[string]int64, *framework.Status) {
	nodes, _ := s.List()
	if ps, ok := p.(framework.PreScorePlugin); ok {
		if st := ps.PreScore(ctx, state, pod, nodes); !st.IsSuccess() && !st.IsSkip() {
			return nil, st
		}
	}
	list := make(framework.NodeScoreList, len(nodes))
	for i, ni := range nodes {
		sc, st := p.Score(ctx, state, pod, ni)
		if !st.IsSuccess() {
			return nil, st
		}
		list[i] = framework.NodeScore{Name: ni.Node().Name, Score: sc}
	}
	if ext := p.ScoreExtensions(); ext != nil {
		if st := ext.NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
			return nil, st
		}
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Name] = s.Score
	}
	return out, nil
}
