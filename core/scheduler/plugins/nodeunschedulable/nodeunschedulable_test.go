package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func TestFilter(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	for _, tc := range []struct {
		name      string
		cordoned  bool
		tolerates []v1.Toleration
		want      framework.Code
	}{
		{"schedulable node", false, nil, framework.Success},
		{"cordoned", true, nil, framework.UnschedulableAndUnresolvable},
		{"cordoned, tolerated", true, []v1.Toleration{{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}, framework.Success},
		{"cordoned, tolerate everything", true, []v1.Toleration{{Operator: v1.TolerationOpExists}}, framework.Success},
		{"cordoned, other toleration", true, []v1.Toleration{{Key: "x", Operator: v1.TolerationOpExists}}, framework.UnschedulableAndUnresolvable},
	} {
		n := pt.Node("n", "1", "1Gi")
		n.Spec.Unschedulable = tc.cordoned
		p := pt.Pod("p", "", "")
		p.Spec.Tolerations = tc.tolerates
		if st := pl.(*NodeUnschedulable).Filter(context.Background(), nil, p, pt.NodeInfo(n)); st.Code() != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, st.Code(), tc.want)
		} else if st != nil && st.Message() != ErrReason {
			t.Errorf("%s: reason %q", tc.name, st.Message())
		}
	}
}
