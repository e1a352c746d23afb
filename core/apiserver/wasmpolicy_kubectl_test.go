package apiserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// The manifest of issue 27's contract.
const requireTeamPolicy = `apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: require-team}
spec:
  hook: admission.validate
  mode: Monitor                      # or Enforce (the default)
  module: {image: 127.0.0.1:5000/policies/require-labels:v1}
  settings: {labels: [team]}
  failurePolicy: Fail
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    namespaceSelector: {matchLabels: {wasmkube.io/require-team: "true"}}
`

// TestKubectlWasmPolicy: the built-in WasmPolicy is served as the other built-in kinds are,
// to the real kubectl: apply, get with its columns, explain, strict field validation, a bad
// field refused with its name, watch, the status subresource, and RBAC.
func TestKubectlWasmPolicy(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithListen("127.0.0.1:47201"))
	k := newKubectl(t, srv)

	if out := k.ok("apply", "-f", k.file("wp.yaml", requireTeamPolicy)); !strings.Contains(out, "wasmpolicy.policy.wasmkube.io/require-team created") {
		t.Fatalf("apply:\n%s", out)
	}
	out := k.ok("get", "wasmpolicies")
	if got := header(out); got != "NAME HOOK MODE READY DIGEST AGE" {
		t.Fatalf("columns %q:\n%s", got, out)
	}
	if f := strings.Fields(strings.Split(out, "\n")[1]); len(f) < 5 || f[0] != "require-team" || f[1] != "admission.validate" || f[2] != "Monitor" || f[3] != "0/0" || f[4] != "<none>" {
		t.Fatalf("row:\n%s", out)
	}
	if got := k.ok("get", "wp", "require-team", "-o", "jsonpath={.spec.module.pullPolicy} {.spec.admission.validationActions} {.metadata.generation} {.spec.settings.labels[0]}"); got != `IfNotPresent ["Deny"] 1 team` {
		t.Errorf("defaults and settings: %q", got)
	}
	// Applying the same manifest again changes nothing.
	if out := k.ok("apply", "-f", k.file("wp.yaml", requireTeamPolicy)); !strings.Contains(out, "unchanged") {
		t.Errorf("second apply:\n%s", out)
	}
	if out := k.ok("apply", "-f", k.file("wp.yaml", strings.Replace(requireTeamPolicy, "mode: Monitor", "mode: Enforce", 1))); !strings.Contains(out, "configured") {
		t.Errorf("apply of a change:\n%s", out)
	}
	if got := k.ok("get", "wp", "require-team", "-o", "jsonpath={.spec.mode} {.metadata.generation}"); got != "Enforce 2" {
		t.Errorf("after the change: %q", got)
	}
	// The field manager tracks this kind as the others (server-side apply is not served yet).
	if got := k.ok("get", "wp", "require-team", "-o", "jsonpath={.metadata.managedFields[*].manager}"); got == "" {
		t.Errorf("managedFields managers: %q", got)
	}

	out = k.ok("explain", "wasmpolicy.spec.module")
	for _, want := range []string{"GROUP:      policy.wasmkube.io", "image\t<string>", "sha256\t<string>", "pullPolicy\t<string>", "REGISTRY/REPO:TAG"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain wasmpolicy.spec.module lacks %q:\n%s", want, out)
		}
	}

	// A bad value is refused with its field; an unknown field too (kubectl's default is
	// strict server-side field validation).
	bad := strings.NewReplacer("mode: Monitor", "mode: Shadow", "operations: [CREATE]", "operations: [MERGE]", "name: require-team", "name: bad").Replace(requireTeamPolicy)
	out, err := k.run("apply", "-f", k.file("bad.yaml", bad))
	if err == nil || !strings.Contains(out, "spec.mode") || !strings.Contains(out, `"Shadow"`) || !strings.Contains(out, "spec.admission.rules[0].operations[0]") {
		t.Errorf("bad values: %v\n%s", err, out)
	}
	out, err = k.run("apply", "-f", k.file("unknown.yaml", strings.Replace(requireTeamPolicy, "failurePolicy: Fail", "failurePolcy: Fail", 1)))
	if err == nil || !strings.Contains(out, "failurePolcy") {
		t.Errorf("unknown field: %v\n%s", err, out)
	}

	// Watch and the status subresource: a component's report is an event; a main update
	// does not change status.
	gvr := policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")
	dc := dynamic.NewForConfigOrDie(srv.Config).Resource(gvr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cur, err := dc.Get(ctx, "require-team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := dc.Watch(ctx, metav1.ListOptions{ResourceVersion: cur.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	digest := "sha256:" + strings.Repeat("ab", 32)
	_ = unstructured.SetNestedField(cur.Object, digest, "status", "digest")
	_ = unstructured.SetNestedField(cur.Object, int64(1), "status", "readyComponents")
	_ = unstructured.SetNestedField(cur.Object, int64(1), "status", "targetedComponents")
	if _, err := dc.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w.ResultChan():
		if ev.Type != watch.Modified {
			t.Fatalf("watch event %s", ev.Type)
		}
		if d, _, _ := unstructured.NestedString(ev.Object.(*unstructured.Unstructured).Object, "status", "digest"); d != digest {
			t.Fatalf("watched status.digest %q", d)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the status update")
	}
	if out := k.ok("get", "wp"); !strings.Contains(out, "1/1") || !strings.Contains(out, "sha256:ababababab") {
		t.Errorf("READY and DIGEST after the status update:\n%s", out)
	}
	out, err = k.run("patch", "wasmpolicy", "require-team", "--subresource=status", "--type=merge", "-p", `{"status":{"components":[{"name":"node-a","component":"proxy","phase":"Up"}]}}`)
	if err == nil || !strings.Contains(out, "status.components[0].component") || !strings.Contains(out, "status.components[0].phase") {
		t.Errorf("bad status: %v\n%s", err, out)
	}

	// RBAC: a user without a grant is refused, naming the resource and group.
	out, err = k.run("get", "wasmpolicies", "--as", "alice")
	if err == nil || !strings.Contains(out, `cannot list resource "wasmpolicies" in API group "policy.wasmkube.io"`) {
		t.Errorf("alice: %v\n%s", err, out)
	}
	k.ok("create", "clusterrole", "wasmpolicy-reader", "--verb=get,list,watch", "--resource=wasmpolicies.policy.wasmkube.io")
	k.ok("create", "clusterrolebinding", "alice-reads", "--clusterrole=wasmpolicy-reader", "--user=alice")
	k.ok("get", "wasmpolicies", "--as", "alice")
	if out, err := k.run("delete", "wasmpolicy", "require-team", "--as", "alice"); err == nil || !strings.Contains(out, "forbidden") {
		t.Errorf("alice deleted a policy: %v\n%s", err, out)
	}
	k.ok("delete", "wasmpolicy", "require-team")
}
