package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// TestWasmPermitHoldsAGroupUntilItIsComplete runs the WAT coscheduling-permit example at
// Permit against a real API server: the members of an incomplete group wait at Permit,
// reserved but unbound, and the last member's Permit releases them all.
func TestWasmPermitHoldsAGroupUntilItIsComplete(t *testing.T) {
	c := newCluster(t, 3)
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension}, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	module := wasmbuild.WAT(t, "wasm-examples/wat/coscheduling-permit/coscheduling-permit.wat")
	cfg := fmt.Sprintf(`
scheduler:
  wasmPlugins:
  - name: gang
    path: %s
  profiles:
  - schedulerName: default-scheduler
    plugins:
      permit:
        enabled: [{name: gang}]
`, module)
	s, _ := c.startScheduler(scheduler.Options{Config: []byte(cfg), WasmLoader: schedwasm.NewLoader(h).Load})
	member := labels("scheduling.wasmkube.io/group", "train", "scheduling.wasmkube.io/min-available", "3")
	c.createPod("train-0", member)
	c.createPod("train-1", member)
	c.createPod("solo")
	c.waitPod("solo", "bound (no group: allowed at once)", func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	want := []string{"default/train-0", "default/train-1"}
	err = wait.PollUntilContextTimeout(c.ctx, 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return slices.Equal(s.WaitingPods(), want), nil
	})
	if err != nil {
		t.Fatalf("pods waiting at Permit: %v, want %v", s.WaitingPods(), want)
	}
	// Held at Permit, so not bound: no binding is written before Permit allows.
	for _, name := range []string{"train-0", "train-1"} {
		p, err := c.client.CoreV1().Pods("default").Get(c.ctx, name, metav1.GetOptions{})
		if err != nil || p.Spec.NodeName != "" {
			t.Fatalf("pod %s of an incomplete group: node %q, err %v; want unbound", name, nodeOf(p), err)
		}
	}
	c.createPod("train-2", member)
	for _, name := range []string{"train-0", "train-1", "train-2"} {
		c.waitPod(name, "bound with its group", func(p *v1.Pod) bool { return p.Spec.NodeName != "" })
	}
	if w := s.WaitingPods(); len(w) != 0 {
		t.Fatalf("pods still waiting after the group bound: %v", w)
	}
}
