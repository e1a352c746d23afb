package balancedallocation

import (
	"context"
	"testing"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	pt "github.com/wasmkube/wasmkube/core/scheduler/plugins/internal/plugintest"
)

func TestScore(t *testing.T) {
	pl, _ := New(context.Background(), nil, nil)
	ba := pl.(*BalancedAllocation)
	for _, tc := range []struct {
		name string
		pod  *framework.NodeInfo
		req  [2]string
		want int64
	}{
		// cpu 2/4 = .5, mem 4/8 = .5: perfectly balanced.
		{"balanced", pt.NodeInfo(pt.Node("n", "4", "8Gi")), [2]string{"2", "4Gi"}, 100},
		// cpu .75, mem .25: std dev .25 → 75.
		{"skewed", pt.NodeInfo(pt.Node("n", "4", "8Gi")), [2]string{"3", "2Gi"}, 75},
		// existing pod counts: cpu (1+1)/4 = .5, mem (1+3)/8 = .5.
		{"with existing", pt.NodeInfo(pt.Node("n", "4", "8Gi"), pt.On(pt.Pod("e", "1", "1Gi"), "n")), [2]string{"1", "3Gi"}, 100},
	} {
		p := pt.Pod("p", tc.req[0], tc.req[1])
		state := framework.NewCycleState()
		if st := ba.PreScore(context.Background(), state, p, nil); !st.IsSuccess() {
			t.Fatal(st)
		}
		if got, _ := ba.Score(context.Background(), state, p, tc.pod); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if st := ba.PreScore(context.Background(), framework.NewCycleState(), pt.Pod("be", "", ""), nil); !st.IsSkip() {
		t.Fatalf("best-effort pod should Skip, got %v", st)
	}
}
