// Package tainttoleration is the TaintToleration plugin: Filter rejects nodes with a
// NoSchedule or NoExecute taint the pod does not tolerate; Score prefers nodes with
// fewer untolerated PreferNoSchedule taints.
package tainttoleration

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/match"
)

// Name of the plugin.
const Name = "TaintToleration"

const stateKey framework.StateKey = "PreScore" + Name

// TaintToleration implements Filter, PreScore and Score.
type TaintToleration struct{}

// New is the factory.
func New(_ context.Context, args json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*TaintToleration) Name() string { return Name }

func hardEffect(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// Filter implements framework.FilterPlugin.
func (*TaintToleration) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	taint, bad := match.FirstUntolerated(node.Node().Spec.Taints, pod.Spec.Tolerations, hardEffect)
	if !bad {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value))
}

type preScoreState struct{ tolerations []v1.Toleration }

func (s *preScoreState) Clone() framework.StateData { return s }

// PreScore implements framework.PreScorePlugin: it keeps the tolerations that matter
// for PreferNoSchedule taints.
func (*TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var tols []v1.Toleration
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == v1.TaintEffectPreferNoSchedule {
			tols = append(tols, t)
		}
	}
	state.Write(stateKey, &preScoreState{tolerations: tols})
	return nil
}

// Score implements framework.ScorePlugin: the count of untolerated PreferNoSchedule
// taints (reversed by NormalizeScore).
func (*TaintToleration) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) (int64, *framework.Status) {
	tols := pod.Spec.Tolerations
	if d, ok := state.Read(stateKey); ok {
		tols = d.(*preScoreState).tolerations
	}
	var n int64
	for i := range node.Node().Spec.Taints {
		t := &node.Node().Spec.Taints[i]
		if t.Effect == v1.TaintEffectPreferNoSchedule && !match.Tolerated(tols, t) {
			n++
		}
	}
	return n, nil
}

// ScoreExtensions implements framework.ScorePlugin.
func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore implements framework.ScoreExtensions.
func (*TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *v1.Pod, scores framework.NodeScoreList) *framework.Status {
	return framework.DefaultNormalizeScore(framework.MaxNodeScore, true, scores)
}

// SignPod implements framework.SignPlugin: verdicts and scores depend on the
// tolerations only.
func (*TaintToleration) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.TolerationsSignerName, Value: framework.TolerationsSigner(pod)}}, nil
}
