// Package balancedallocation is the NodeResourcesBalancedAllocation plugin: it prefers
// nodes whose cpu and memory would be used in equal fractions after placing the pod.
package balancedallocation

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "NodeResourcesBalancedAllocation"

// Args are the plugin's args.
type Args struct {
	Resources []struct {
		Name   string `json:"name"`
		Weight int64  `json:"weight,omitempty"`
	} `json:"resources,omitempty"`
}

// BalancedAllocation implements PreScore and Score.
type BalancedAllocation struct{ resources []v1.ResourceName }

// New is the factory.
func New(_ context.Context, raw json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(Name, raw, &a); err != nil {
		return nil, err
	}
	pl := &BalancedAllocation{resources: []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}}
	if len(a.Resources) > 0 {
		pl.resources = nil
		for i, r := range a.Resources {
			if r.Name == "" {
				return nil, fmt.Errorf("args of plugin %s: resources[%d].name: required", Name, i)
			}
			pl.resources = append(pl.resources, v1.ResourceName(r.Name))
		}
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*BalancedAllocation) Name() string { return Name }

const stateKey framework.StateKey = "PreScore" + Name

type preScoreState struct{ req framework.Resource }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin; best-effort pods (no requests) Skip,
// as upstream.
func (pl *BalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	req, _ := framework.PodRequests(pod)
	if req.MilliCPU == 0 && req.Memory == 0 && len(req.ScalarResources) == 0 && req.EphemeralStorage == 0 {
		return framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, &preScoreState{req: req})
	return nil
}

// Score implements framework.ScorePlugin: (1 - standard deviation of the requested
// fractions) * 100.
func (pl *BalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	var req framework.Resource
	if d, ok := state.Read(stateKey); ok {
		req = d.(*preScoreState).req
	} else {
		req, _ = framework.PodRequests(pod)
	}
	var fractions [8]float64
	fs := fractions[:0]
	for _, name := range pl.resources {
		alloc := node.Allocatable.Get(name)
		if alloc == 0 {
			continue
		}
		f := float64(node.Requested.Get(name)+req.Get(name)) / float64(alloc)
		fs = append(fs, math.Min(f, 1))
	}
	return int64((1 - stdDev(fs)) * float64(framework.MaxNodeScore)), nil
}

func stdDev(fs []float64) float64 {
	if len(fs) == 2 {
		return math.Abs((fs[0] - fs[1]) / 2)
	}
	if len(fs) < 2 {
		return 0
	}
	var mean float64
	for _, f := range fs {
		mean += f
	}
	mean /= float64(len(fs))
	var v float64
	for _, f := range fs {
		v += (f - mean) * (f - mean)
	}
	return math.Sqrt(v / float64(len(fs)))
}

// ScoreExtensions implements framework.ScorePlugin.
func (*BalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

// SignPod implements framework.SignPlugin: scores depend on the pod's requests only.
func (*BalancedAllocation) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.ResourcesSignerName, Value: framework.ResourcesSigner(pod)}}, nil
}
