package admitwasm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// TestExplorerRecordNamesTheDenyingPolicy: the decision explorer's record of a refused
// create names the policy that refused it, with its message, beside the policies that
// ran or were skipped (and why), in chain order; an admitted request's mutating policy
// shows its JSON Patch.
func TestExplorerRecordNamesTheDenyingPolicy(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: add-annotation
    path: @add-annotation@
    `+podRule+`
    objectSelector: {matchLabels: {mutate: "yes"}}
  - name: require-team
    path: @require-team@
    `+podRule+`
`)
	ctx := context.Background()
	pods := c.srv.Client.CoreV1().Pods("default")
	pod := func(name string, labels map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	}
	if _, err := pods.Create(ctx, pod("refused", map[string]string{"mutate": "yes"}), metav1.CreateOptions{}); err == nil {
		t.Fatal("a pod without label team was admitted")
	}
	if _, err := pods.Create(ctx, pod("admitted", map[string]string{"team": "a"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, pod("mutated", map[string]string{"team": "a", "mutate": "yes"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) *explorerv1.AdmissionRequest {
		t.Helper()
		raw, err := c.srv.Client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces/default/pods", name).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pd explorerv1.PodDecisions
		if err := json.Unmarshal(raw, &pd); err != nil {
			t.Fatal(err)
		}
		for _, r := range pd.Records {
			if r.AdmissionRequest != nil && r.AdmissionRequest.Operation == "CREATE" {
				return r.AdmissionRequest
			}
		}
		t.Fatalf("no admission record of pod %s in %s", name, raw)
		return nil
	}
	verdicts := func(ar *explorerv1.AdmissionRequest) string {
		var out []string
		for _, p := range ar.Policies {
			out = append(out, p.Name+":"+p.Phase+":"+p.Verdict)
		}
		return strings.Join(out, " ")
	}

	ar := get("refused")
	if ar.Allowed || ar.DeniedBy != "require-team" || !strings.Contains(ar.Message, "admission policy require-team denied the request") {
		t.Fatalf("refused request: allowed %v, deniedBy %q, message %q; want refused by require-team", ar.Allowed, ar.DeniedBy, ar.Message)
	}
	if got, want := verdicts(ar), "add-annotation:Mutating:Mutated require-team:Validating:Denied"; got != want {
		t.Errorf("refused request's policies: %s, want %s", got, want)
	}
	last := ar.Policies[len(ar.Policies)-1]
	if !strings.Contains(last.Message, "team") || last.Wasm == nil || !strings.HasPrefix(last.Wasm.Digest, "sha256:") || last.DurationNanos <= 0 {
		t.Errorf("the denying policy's entry: %+v", last)
	}

	ar = get("admitted")
	if !ar.Allowed || ar.DeniedBy != "" {
		t.Fatalf("admitted request: allowed %v, deniedBy %q", ar.Allowed, ar.DeniedBy)
	}
	if got, want := verdicts(ar), "add-annotation:Mutating:Skipped require-team:Validating:Allowed"; got != want {
		t.Errorf("admitted request's policies: %s, want %s", got, want)
	}
	if ar.Policies[0].SkipReason == "" {
		t.Errorf("a skipped policy says why: %+v", ar.Policies[0])
	}
	ar = get("mutated")
	if m := ar.Policies[0]; m.Verdict != explorerv1.PolicyMutated || !json.Valid(m.Patch) || !strings.Contains(string(m.Patch), `"op"`) {
		t.Errorf("the mutating policy's entry: %+v (patch %s), want Mutated with its JSON Patch", m, m.Patch)
	}

	// A reload that drops a policy is a swap on the timeline.
	c.write(`
admission:
  policies:
  - name: require-team
    path: @require-team@
    ` + podRule + `
`)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		raw, err := c.srv.Client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "records").Param("type", "Swap").DoRaw(ctx)
		if err != nil {
			return false, err
		}
		var list explorerv1.RecordList
		if err := json.Unmarshal(raw, &list); err != nil {
			return false, err
		}
		for _, r := range list.Items {
			if sw := r.Swap; sw != nil && sw.Policy == "add-annotation" && sw.Result == explorerv1.SwapApplied && r.Component == explorerv1.ComponentAPIServer {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no swap record of add-annotation's removal: %v", err)
	}
}
