// Package framework defines the scheduler's extension points as small interfaces.
//
// Native (Go) plugins and wasm plugins implement exactly these interfaces; the runtime
// that drives them (core/scheduler/runtime) cannot tell them apart. A plugin implements
// only the extension points it needs.
//
// Batching: Filter and Score are called for many nodes per pod. A plugin may also
// implement BatchFilterPlugin / BatchScorePlugin to receive a whole chunk of nodes in one
// call (the wasm adapter does, so that a pod costs one boundary crossing per chunk, not
// one per node). The runtime always prefers the batch form when a plugin offers it; the
// verdicts must be the same as calling Filter/Score node by node.
package framework

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// Plugin is the parent of every extension point.
type Plugin interface {
	// Name is the name the plugin is known by in profiles, metrics and explanations.
	Name() string
}

// PointSelector is implemented by a plugin whose Go type has the methods of more extension
// points than it serves: a wasm plugin is one type whatever entry points its module
// exports. The runtime uses such a plugin only at the points (config.PreFilter, ...) for
// which ServesPoint is true.
type PointSelector interface {
	ServesPoint(point string) bool
}

// Closer is implemented by plugins that hold resources (a wasm plugin's instances). The
// runtime closes them when the profile that built them is retired by a config swap, once
// its cycles in flight have finished.
type Closer interface {
	Close() error
}

// PreFilterResult narrows the set of nodes to evaluate; nil means all nodes.
type PreFilterResult struct {
	NodeNames map[string]struct{}
}

// PreFilterPlugin runs once per scheduling cycle before Filter.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod) (*PreFilterResult, *Status)
}

// FilterPlugin decides whether pod can run on one node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) *Status
}

// BatchFilterPlugin is an optional form of FilterPlugin that filters many nodes in one
// call. statuses has len(nodes); the plugin sets statuses[i] (nil means Success).
type BatchFilterPlugin interface {
	FilterPlugin
	FilterBatch(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, statuses []*Status)
}

// PostFilterResult carries the node nominated by a PostFilter plugin (preemption).
type PostFilterResult struct {
	NominatedNodeName string
}

// PostFilterPlugin runs when no node passed Filter (for example, preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, filtered NodeToStatusMap) (*PostFilterResult, *Status)
}

// PreScorePlugin runs once per cycle with the nodes that passed Filter.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks one feasible node. Scores are normalized to [MinNodeScore, MaxNodeScore]
// by ScoreExtensions (when present) and then multiplied by the plugin's weight.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when the plugin has no NormalizeScore.
	ScoreExtensions() ScoreExtensions
}

// BatchScorePlugin is an optional form of ScorePlugin that scores many nodes in one call.
// scores has len(nodes).
type BatchScorePlugin interface {
	ScorePlugin
	ScoreBatch(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo, scores []int64) *Status
}

// ScoreExtensions is implemented by score plugins that normalize their raw scores.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// ReservePlugin is told when a node is chosen (Reserve) and when that choice is undone
// because a later step failed (Unreserve). Unreserve must be idempotent.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// PermitPlugin may approve, deny or delay (Wait, up to the returned timeout) a binding.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) (*Status, time.Duration)
}

// PreBindPlugin runs before Bind.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// BindPlugin binds the pod; a plugin returns Skip to let the next Bind plugin act.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string) *Status
}

// PostBindPlugin is informed after a successful bind.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *v1.Pod, nodeName string)
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is the scores of one plugin for the feasible nodes, in node order.
type NodeScoreList []NodeScore

// NodeToStatusMap holds the Filter verdict of every rejected node.
type NodeToStatusMap map[string]*Status

const (
	// MaxNodeScore is the highest score a plugin returns after normalization.
	MaxNodeScore int64 = 100
	// MinNodeScore is the lowest.
	MinNodeScore int64 = 0
)

// NodeInfoLister reads the scheduler's snapshot of nodes for the current cycle.
type NodeInfoLister interface {
	List() ([]*NodeInfo, error)
	Get(nodeName string) (*NodeInfo, error)
	// HavePodsWithAffinityList lists nodes with at least one pod that has (anti-)affinity.
	HavePodsWithAffinityList() ([]*NodeInfo, error)
}

// Handle is what the runtime gives every plugin at construction.
type Handle interface {
	// SnapshotSharedLister is the cycle's consistent view of nodes and their pods.
	SnapshotSharedLister() NodeInfoLister
	// ClientSet talks to the API server (the only bus); nil in pure unit tests.
	ClientSet() kubernetes.Interface
	// Parallelism is the number of workers Filter and Score run with.
	Parallelism() int
}

// PluginFactory builds a plugin from its args (the pluginConfig args from the config
// file, as JSON; nil when none were given).
type PluginFactory func(ctx context.Context, args json.RawMessage, h Handle) (Plugin, error)

// Registry maps plugin names to factories. Built-in plugins and wasm modules declared in
// the config file are registered the same way.
type Registry map[string]PluginFactory

// PreFilterExtensions lets the runtime tell a plugin that a pod was added to or removed
// from a node while it simulates (preemption, nominated pods), so that state computed in
// PreFilter stays right for the simulated node.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, node *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, node *NodeInfo) *Status
}

// PreFilterExtender is implemented by PreFilter plugins that have PreFilterExtensions.
type PreFilterExtender interface {
	PreFilterExtensions() PreFilterExtensions
}

// PodNominator knows the pods nominated to nodes by preemption and not yet bound.
type PodNominator interface {
	// NominatedPodsForNode returns the pods nominated to nodeName.
	NominatedPodsForNode(nodeName string) []*PodInfo
}

// PreemptionHandle is the Handle of a profile's runtime as PostFilter plugins see it:
// it can run the profile's filters against a simulated node.
type PreemptionHandle interface {
	Handle
	PodNominator
	// RunFilterPluginsWithNominatedPods runs every Filter plugin on node, counting pods
	// of equal or higher priority nominated to it as if they were already there.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, node *NodeInfo) *Status
	// RunPreFilterExtensionAddPod and RunPreFilterExtensionRemovePod update the cycle
	// state of every PreFilter plugin after a simulated change of node.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToAdd *PodInfo, node *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podToRemove *PodInfo, node *NodeInfo) *Status
}

// InformerHandle is the Handle of a runtime that shares the scheduler's informers, for
// plugins that look at other objects (PodTopologySpread's default constraints take
// their selector from the pod's Services and ReplicaSet). Factory may return nil (unit
// tests, simulations); plugins then do without.
type InformerHandle interface {
	Handle
	SharedInformerFactory() informers.SharedInformerFactory
}
