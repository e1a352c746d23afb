package nodeports

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func withPorts(p *v1.Pod, ports ...v1.ContainerPort) *v1.Pod {
	p.Spec.Containers[0].Ports = ports
	return p
}

func TestFilter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing []v1.ContainerPort
		want     v1.ContainerPort
		fits     bool
	}{
		{"free", nil, v1.ContainerPort{HostPort: 80}, true},
		{"same port", []v1.ContainerPort{{HostPort: 80}}, v1.ContainerPort{HostPort: 80}, false},
		{"other protocol", []v1.ContainerPort{{HostPort: 80, Protocol: v1.ProtocolUDP}}, v1.ContainerPort{HostPort: 80}, true},
		{"other host IPs", []v1.ContainerPort{{HostPort: 80, HostIP: "10.0.0.1"}}, v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.2"}, true},
		{"wildcard wanted", []v1.ContainerPort{{HostPort: 80, HostIP: "10.0.0.1"}}, v1.ContainerPort{HostPort: 80}, false},
		{"wildcard taken", []v1.ContainerPort{{HostPort: 80}}, v1.ContainerPort{HostPort: 80, HostIP: "10.0.0.2"}, false},
		{"other port", []v1.ContainerPort{{HostPort: 81}}, v1.ContainerPort{HostPort: 80}, true},
	} {
		pl, _ := New(context.Background(), nil, nil)
		np := pl.(*NodePorts)
		ni := pt.NodeInfo(pt.Node("n", "1", "1Gi"), withPorts(pt.On(pt.Pod("old", "", ""), "n"), tc.existing...))
		state := framework.NewCycleState()
		p := withPorts(pt.Pod("p", "", ""), tc.want)
		if _, st := np.PreFilter(context.Background(), state, p); !st.IsSuccess() {
			t.Fatal(st)
		}
		st := np.Filter(context.Background(), state, p, ni)
		if st.IsSuccess() != tc.fits || (!tc.fits && st.Message() != ErrReason) {
			t.Errorf("%s: %v, want fits=%v", tc.name, st, tc.fits)
		}
	}
	pl, _ := New(context.Background(), nil, nil)
	if _, st := pl.(*NodePorts).PreFilter(context.Background(), framework.NewCycleState(), pt.Pod("p", "", "")); !st.IsSkip() {
		t.Fatalf("a pod without host ports should Skip, got %v", st)
	}
}
