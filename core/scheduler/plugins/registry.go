// Package plugins lists the built-in scheduler plugins; each lives in a package of its
// own with a Name constant and a New factory.
package plugins

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/balancedallocation"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/defaultbinder"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/defaultpreemption"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/dynamicresources"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/gangscheduling"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/interpodaffinity"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/nodeaffinity"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/nodename"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/nodeports"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/noderesources"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/nodeunschedulable"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/podtopologyspread"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/tainttoleration"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins/volumebinding"
)

// NewInTreeRegistry returns a fresh registry of the built-in plugins.
func NewInTreeRegistry() framework.Registry {
	return framework.Registry{
		nodename.Name:           nodename.New,
		nodeunschedulable.Name:  nodeunschedulable.New,
		tainttoleration.Name:    tainttoleration.New,
		nodeaffinity.Name:       nodeaffinity.New,
		nodeports.Name:          nodeports.New,
		noderesources.Name:      noderesources.New,
		balancedallocation.Name: balancedallocation.New,
		podtopologyspread.Name:  podtopologyspread.New,
		interpodaffinity.Name:   interpodaffinity.New,
		defaultpreemption.Name:  defaultpreemption.New,
		defaultbinder.Name:      defaultbinder.New,
		volumebinding.Name:      volumebinding.New,
		dynamicresources.Name:   dynamicresources.New,
		gangscheduling.Name:     newSignedGang,
	}
}

// signedGang is GangScheduling with its signature (framework.SignPlugin). Its PreFilter
// holds or passes a pod whatever the nodes, runs for every pod (batched or not), and
// restricts no node, so it signs nothing: it never makes a pod unsignable.
type signedGang struct{ *gangscheduling.Plugin }

func newSignedGang(ctx context.Context, args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	p, err := gangscheduling.New(ctx, args, h)
	if err != nil {
		return nil, err
	}
	return signedGang{p.(*gangscheduling.Plugin)}, nil
}

// SignPod implements framework.SignPlugin.
func (signedGang) SignPod(context.Context, *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return nil, nil
}
