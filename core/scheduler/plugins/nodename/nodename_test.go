package nodename

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func TestFilter(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	for _, tc := range []struct {
		podNode string
		want    framework.Code
	}{{"", framework.Success}, {"n1", framework.Success}, {"n2", framework.UnschedulableAndUnresolvable}} {
		p := pt.Pod("p", "", "")
		p.Spec.NodeName = tc.podNode
		st := pl.(*NodeName).Filter(context.Background(), nil, p, pt.NodeInfo(pt.Node("n1", "1", "1Gi")))
		if st.Code() != tc.want || (st != nil && st.Message() != ErrReason) {
			t.Errorf("spec.nodeName %q: %v, want %v", tc.podNode, st.Code(), tc.want)
		}
	}
}
