// Package nodeports is the NodePorts plugin: a pod asking for host ports fits only
// nodes where those ports are free.
package nodeports

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// Name of the plugin.
const Name = "NodePorts"

// ErrReason is upstream's reason.
const ErrReason = "node(s) didn't have free ports for the requested pod ports"

const stateKey framework.StateKey = "PreFilter" + Name

// NodePorts implements PreFilter and Filter.
type NodePorts struct{}

// New is the factory.
func New(_ context.Context, args json.RawMessage, _ framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, framework.DecodeArgs(Name, args, &struct{}{})
}

// Name implements framework.Plugin.
func (*NodePorts) Name() string { return Name }

type preFilterState []v1.ContainerPort

func (s preFilterState) Clone() framework.StateData { return s }

// PreFilter implements framework.PreFilterPlugin; pods without host ports Skip.
func (*NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod) (*framework.PreFilterResult, *framework.Status) {
	var ports preFilterState
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if p.HostPort > 0 {
				ports = append(ports, p)
			}
		}
	}
	if len(ports) == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(stateKey, ports)
	return nil, nil
}

// Filter implements framework.FilterPlugin.
func (*NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, node *framework.NodeInfo) *framework.Status {
	d, ok := state.Read(stateKey)
	if !ok {
		return framework.AsStatus(errMissingState)
	}
	for _, p := range d.(preFilterState) {
		if Conflicts(node.UsedPorts, p.Protocol, p.HostIP, p.HostPort) {
			return framework.NewStatus(framework.Unschedulable, ErrReason)
		}
	}
	return nil
}

type stateError string

func (e stateError) Error() string { return string(e) }

const errMissingState = stateError("NodePorts: PreFilter state missing")

// Conflicts reports whether a host port is taken: the same protocol and port on the
// same host IP, or on any IP when either side is 0.0.0.0.
func Conflicts(used map[string]struct{}, protocol v1.Protocol, hostIP string, port int32) bool {
	if len(used) == 0 {
		return false
	}
	if hostIP == "" {
		hostIP = "0.0.0.0"
	}
	if _, ok := used[framework.PortKey(protocol, hostIP, port)]; ok {
		return true
	}
	if hostIP == "0.0.0.0" {
		// Any IP with this port conflicts.
		want := framework.PortKey(protocol, "", port)
		wantProto, wantPort := want[:len(string(protoOrTCP(protocol)))], portSuffix(want)
		for k := range used {
			if k[:len(wantProto)] == wantProto && portSuffix(k) == wantPort {
				return true
			}
		}
		return false
	}
	_, ok := used[framework.PortKey(protocol, "0.0.0.0", port)]
	return ok
}

func protoOrTCP(p v1.Protocol) v1.Protocol {
	if p == "" {
		return v1.ProtocolTCP
	}
	return p
}

func portSuffix(k string) string {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			return k[i:]
		}
	}
	return k
}

// SignPod implements framework.SignPlugin: the verdict depends on the host ports only.
func (*NodePorts) SignPod(_ context.Context, pod *v1.Pod) ([]framework.SignFragment, *framework.Status) {
	return []framework.SignFragment{{Key: framework.HostPortsSignerName, Value: framework.HostPortsSigner(pod)}}, nil
}
