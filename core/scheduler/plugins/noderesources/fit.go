// Package noderesources is the NodeResourcesFit plugin: Filter rejects nodes whose
// allocatable cannot hold the pod's requests on top of what is already requested there;
// Score ranks nodes by LeastAllocated (spread, the default) or MostAllocated (pack).
package noderesources

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "NodeResourcesFit"

// Scoring strategies.
const (
	LeastAllocated = "LeastAllocated"
	MostAllocated  = "MostAllocated"
)

// ResourceSpec is one resource and its weight in scoring.
type ResourceSpec struct {
	Name   string `json:"name"`
	Weight int64  `json:"weight,omitempty"`
}

// ScoringStrategy selects how Score ranks nodes.
type ScoringStrategy struct {
	Type      string         `json:"type,omitempty"`
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// Args are the plugin's args.
type Args struct {
	// IgnoredResources are extended resources Filter does not check.
	IgnoredResources []string         `json:"ignoredResources,omitempty"`
	ScoringStrategy  *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// Fit implements PreFilter, Filter and Score.
type Fit struct {
	ignored   map[string]bool
	most      bool
	resources []ResourceSpec
	weightSum int64
}

// New is the factory.
func New(_ context.Context, raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(Name, raw, &a); err != nil {
		return nil, err
	}
	pl := &Fit{ignored: map[string]bool{}}
	for _, r := range a.IgnoredResources {
		pl.ignored[r] = true
	}
	pl.resources = []ResourceSpec{{Name: "cpu", Weight: 1}, {Name: "memory", Weight: 1}}
	if s := a.ScoringStrategy; s != nil {
		switch s.Type {
		case "", LeastAllocated:
		case MostAllocated:
			pl.most = true
		default:
			return nil, fmt.Errorf("args of plugin %s: scoringStrategy.type: unsupported %q (want %s or %s)", Name, s.Type, LeastAllocated, MostAllocated)
		}
		if len(s.Resources) > 0 {
			pl.resources = s.Resources
		}
	}
	for i, r := range pl.resources {
		if r.Weight == 0 {
			pl.resources[i].Weight = 1
		}
		if r.Weight < 0 || r.Weight > 100 {
			return nil, fmt.Errorf("args of plugin %s: scoringStrategy.resources[%d].weight: must be in 1..100, got %d", Name, i, r.Weight)
		}
		pl.weightSum += pl.resources[i].Weight
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*Fit) Name() string { return Name }

const stateKey framework.StateKey = "PreFilter" + Name

type preFilterState struct {
	req, nonZero framework.Resource
}

func (s *preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin.
func (pl *Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	req, nz := framework.PodRequests(pod)
	state.Write(stateKey, &preFilterState{req: req, nonZero: nz})
	return nil, nil
}

func podState(state *framework.CycleState, pod *v1.Pod) *preFilterState {
	if d, ok := state.Read(stateKey); ok {
		return d.(*preFilterState)
	}
	req, nz := framework.PodRequests(pod)
	return &preFilterState{req: req, nonZero: nz}
}

// Filter implements framework.FilterPlugin.
func (pl *Fit) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	reasons := Insufficient(&podState(state, pod).req, node, pl.ignored)
	if len(reasons) == 0 {
		return nil
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// Insufficient lists upstream's reasons why req does not fit on node ("Too many pods",
// "Insufficient cpu", ...).
func Insufficient(req *framework.Resource, node *framework.NodeInfo, ignored map[string]bool) []string {
	var reasons []string
	if int64(len(node.Pods))+1 > node.Allocatable.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	if req.MilliCPU == 0 && req.Memory == 0 && req.EphemeralStorage == 0 && len(req.ScalarResources) == 0 {
		return reasons
	}
	if req.MilliCPU > 0 && req.MilliCPU > node.Allocatable.MilliCPU-node.Requested.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
	}
	if req.Memory > 0 && req.Memory > node.Allocatable.Memory-node.Requested.Memory {
		reasons = append(reasons, "Insufficient memory")
	}
	if req.EphemeralStorage > 0 && req.EphemeralStorage > node.Allocatable.EphemeralStorage-node.Requested.EphemeralStorage {
		reasons = append(reasons, "Insufficient ephemeral-storage")
	}
	for name, q := range req.ScalarResources {
		if q == 0 || ignored[string(name)] {
			continue
		}
		if q > node.Allocatable.ScalarResources[name]-node.Requested.ScalarResources[name] {
			reasons = append(reasons, "Insufficient "+string(name))
		}
	}
	return reasons
}

// Score implements framework.ScorePlugin.
func (pl *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	ps := podState(state, pod)
	var total int64
	for _, r := range pl.resources {
		name := v1.ResourceName(r.Name)
		alloc := node.Allocatable.Get(name)
		var requested int64
		if name == v1.ResourceCPU || name == v1.ResourceMemory {
			requested = node.NonZeroRequested.Get(name) + ps.nonZero.Get(name)
		} else {
			requested = node.Requested.Get(name) + ps.req.Get(name)
		}
		var s int64
		if pl.most {
			s = MostAllocatedScore(requested, alloc)
		} else {
			s = LeastAllocatedScore(requested, alloc)
		}
		total += s * r.Weight
	}
	if pl.weightSum == 0 {
		return 0, nil
	}
	return total / pl.weightSum, nil
}

// LeastAllocatedScore is 100 for an empty node and 0 for a full one.
func LeastAllocatedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// MostAllocatedScore is 0 for an empty node and 100 for a full one.
func MostAllocatedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	if requested > capacity {
		requested = capacity
	}
	return requested * framework.MaxNodeScore / capacity
}

// ScoreExtensions implements framework.ScorePlugin.
func (*Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// PreScore implements framework.PreScorePlugin: the requests PreFilter computed serve
// Score too; it computes them when PreFilter did not run (a profile without it).
func (pl *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	if _, ok := state.Read(stateKey); !ok {
		req, nz := framework.PodRequests(pod)
		state.Write(stateKey, &preFilterState{req: req, nonZero: nz})
	}
	return nil
}

// SignPod implements framework.SignPlugin: verdicts and scores depend on the pod's
// effective requests only (the scoring strategy is the profile's).
func (*Fit) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.ResourcesSignerName, Value: framework.ResourcesSigner(pod)}}, nil
}
