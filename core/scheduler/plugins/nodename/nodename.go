// Package nodename is the NodeName plugin: a pod with spec.nodeName set fits only that
// node.
package nodename

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "NodeName"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't match the requested node name"

// NodeName implements Filter.
type NodeName struct{}

// New is the factory.
func New(_ context.Context, args json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*NodeName) Name() string { return Name }

// Filter implements framework.FilterPlugin.
func (*NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Node().Name {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReason)
	}
	return nil
}

// SignPod implements framework.SignPlugin: the verdict depends on spec.nodeName only.
func (*NodeName) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.NodeNameSignerName, Value: pod.Spec.NodeName}}, nil
}
