package scheduler_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// A user's wasm policy that denies every UPDATE of pods breaks neither scheduling nor
// the scheduler's explanations: a bound pod's comes with its Binding (pods/binding), an
// unschedulable pod's with its FailedScheduling Event, and the status goes through
// pods/status; the policy matches none of these, as upstream's webhook rules on pods.
func TestPodUpdateDenyPolicyDoesNotJudgeTheScheduler(t *testing.T) {
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: h, Config: []byte(`
admission:
  policies:
  - name: deny-pod-updates
    path: ` + wasmbuild.WAT(t, "core/scheduler/testdata/deny-pod-updates.wat") + `
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [UPDATE]}]
`)})
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol))
	cfg := rest.CopyConfig(srv.Config)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, srv: srv, client: client, ctx: ctx}
	c.hollow(ctx, 2, "hollow-")
	c.startScheduler(scheduler.Options{})

	c.createPod("fits", requests("100m", "64Mi"))
	p := c.waitPod("fits", "bound", bound)
	// The policy is in force: a user's update of the pod is refused. The hollow kubelet
	// may write the pod's status in between, so a stale copy is read again on a conflict
	// (the resourceVersion check comes before admission, as upstream's).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.CoreV1().Pods("default").Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Labels = map[string]string{"edited": "yes"}
		_, err = client.CoreV1().Pods("default").Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "pod updates are denied") {
		t.Fatalf("a user's pod update: %v, want the policy's denial", err)
	}
	p = c.waitPod("fits", "bound with an explanation", func(p *v1.Pod) bool { return podExplanation(t, client, p) != nil })
	if e := podExplanation(t, client, p); e.Result != "Scheduled" || e.Node != p.Spec.NodeName {
		t.Fatalf("explanation of fits: %+v, want Scheduled on %s", e, p.Spec.NodeName)
	}

	c.createPod("huge", requests("50", "1Gi"))
	p = c.waitPod("huge", "PodScheduled=False Unschedulable", unschedulable)
	p = c.waitPod("huge", "an explanation", func(p *v1.Pod) bool { return podExplanation(t, client, p) != nil })
	if e := podExplanation(t, client, p); e.Result != "Unschedulable" || e.Nodes != 2 {
		t.Fatalf("explanation of huge: %+v, want Unschedulable over 2 nodes", e)
	}
	if _, ok := p.Annotations[scheduler.ExplainAnnotation]; ok {
		t.Fatal("the scheduler wrote the unschedulable pod itself")
	}
}

// podExplanation is what `wasmkube explain pod` shows, or nil when there is none yet.
func podExplanation(t *testing.T, client kubernetes.Interface, p *v1.Pod) *runtime.Explanation {
	t.Helper()
	raw, err := scheduler.PodExplanation(context.Background(), client, p)
	if err != nil {
		t.Fatal(err)
	}
	if raw == "" {
		return nil
	}
	var e runtime.Explanation
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatalf("explanation of %s: %v", p.Name, err)
	}
	return &e
}
