// Package plugins lists the built-in scheduler plugins; each lives in a package of its
// own with a Name constant and a New factory.
package plugins

import (
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
		gangscheduling.Name:     gangscheduling.New,
	}
}
