// Package rustexamples_test runs the Rust example plugins (built by their build.sh with
// Debian's rustc for wasm32-unknown-unknown) through the real wasm host and scheduler adapter.
package rustexamples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm/schedwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// node allows 10 pods and runs running of them.
func node(name string, running int) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	for i := 0; i < running; i++ {
		n := fmt.Sprintf("%s-%d", name, i)
		ni.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: "default", UID: types.UID(n)}})
	}
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{
		Allocatable: v1.ResourceList{v1.ResourcePods: resource.MustParse("10"), v1.ResourceCPU: resource.MustParse("4")}}})
	return ni
}

func TestFewestPodsScoreThroughTheHost(t *testing.T) {
	ctx := context.Background()
	f := schedwasmtest.Load(t, "fewest", wasmbuild.Script(t, "wasm-examples/rust/fewest-pods-score"))
	if _, err := f(ctx, json.RawMessage(`{"avoidPrefix": 3}`), nil); err == nil || !strings.Contains(err.Error(), "args.avoidPrefix") {
		t.Errorf("numeric avoidPrefix: err = %v, want the init's rejection naming args.avoidPrefix", err)
	}
	nodes := []*framework.NodeInfo{node("a", 0), node("b", 3), node("spot-c", 0), node("d", 10)}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"}}
	tests := []struct {
		args string
		want []int64
	}{
		{``, []int64{100, 70, 100, 0}},
		{`{"avoidPrefix": "spot-"}`, []int64{100, 70, 25, 0}},
	}
	for _, tt := range tests {
		p, err := f(ctx, json.RawMessage(tt.args), nil)
		if err != nil {
			t.Fatalf("args %q: %v", tt.args, err)
		}
		scores := make([]int64, len(nodes))
		if st := p.(framework.BatchScorePlugin).ScoreBatch(ctx, framework.NewCycleState(), pod, nodes, scores); st != nil {
			t.Fatalf("args %q: %v", tt.args, st.Message())
		}
		if fmt.Sprint(scores) != fmt.Sprint(tt.want) {
			t.Errorf("args %q: scores %v, want %v", tt.args, scores, tt.want)
		}
	}
}
