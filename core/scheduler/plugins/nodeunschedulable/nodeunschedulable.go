// Package nodeunschedulable is the NodeUnschedulable plugin: cordoned nodes
// (spec.unschedulable) fit only pods that tolerate the unschedulable taint.
package nodeunschedulable

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/match"
)

// Name of the plugin.
const Name = "NodeUnschedulable"

// ErrReason is upstream's reason.
const ErrReason = "node(s) were unschedulable"

// NodeUnschedulable implements Filter.
type NodeUnschedulable struct{}

// New is the factory.
func New(_ context.Context, args json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*NodeUnschedulable) Name() string { return Name }

var unschedulableTaint = v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}

// Filter implements framework.FilterPlugin.
func (*NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if !node.Node().Spec.Unschedulable {
		return nil
	}
	if match.Tolerated(pod.Spec.Tolerations, &unschedulableTaint) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
}

// SignPod implements framework.SignPlugin: the verdict depends on the tolerations only.
func (*NodeUnschedulable) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.TolerationsSignerName, Value: framework.TolerationsSigner(pod)}}, nil
}
