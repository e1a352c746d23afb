package admitwasm_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestServerSideApplyThroughPolicy: a wasm mutating policy sees the object a server-side
// apply produced (its objectSelector matches a label that only the applied configuration
// carries), its change is stored, and it owns nothing: managedFields hold the applier's
// fields only, so the applier's next apply neither conflicts with nor removes it.
func TestServerSideApplyThroughPolicy(t *testing.T) {
	c := startCluster(t, `
admission:
  policies:
  - name: add-annotation
    path: @add-annotation@
    `+podRule+`
    objectSelector: {matchLabels: {mutate: "yes"}}
`)
	ctx := context.Background()
	rc := c.srv.Client.CoreV1().RESTClient()
	apply := func(body string) {
		t.Helper()
		if err := rc.Patch(types.ApplyPatchType).AbsPath("/api/v1/namespaces/default/pods/web").Param("fieldManager", "deployer").
			Body([]byte(body)).Do(ctx).Error(); err != nil {
			t.Fatalf("apply: %v", err)
		}
	}
	apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {mutate: \"yes\"}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	check := func(wantLabels int) {
		t.Helper()
		p, err := c.srv.Client.CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Annotations["mutated-by"] != "add-annotation" {
			t.Fatalf("the policy did not see the applied object: annotations %v", p.Annotations)
		}
		if len(p.Labels) != wantLabels {
			t.Fatalf("labels: %v", p.Labels)
		}
		for _, e := range p.ManagedFields {
			if strings.Contains(string(e.FieldsV1.Raw), "mutated-by") || strings.Contains(string(e.FieldsV1.Raw), "f:annotations") {
				t.Fatalf("the policy's annotation is owned by %q: %s", e.Manager, e.FieldsV1.Raw)
			}
		}
		if len(p.ManagedFields) != 1 || p.ManagedFields[0].Manager != "deployer" || p.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
			t.Fatalf("entries: %+v", p.ManagedFields)
		}
	}
	check(1)
	apply("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels: {mutate: \"yes\", tier: web}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	check(2)
}
