package apiserver_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

const ssaDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: %s
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: 80
`

func managedEntries(t *testing.T, k *kubectlRunner, args ...string) []metav1.ManagedFieldsEntry {
	t.Helper()
	out := k.ok(append(append([]string{"get"}, args...), "-o", "yaml", "--show-managed-fields")...)
	var obj struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Metadata.ManagedFields
}

func entryOf(es []metav1.ManagedFieldsEntry, manager string) *metav1.ManagedFieldsEntry {
	for i := range es {
		if es[i].Manager == manager {
			return &es[i]
		}
	}
	return nil
}

// TestKubectlServerSideApply: real kubectl 1.32's apply --server-side creates and
// updates, a second manager's apply of replicas is a 409 naming the manager and field,
// --force-conflicts takes it, --show-managed-fields shows the entries, a status write has
// its own entry, and kubectl scale takes replicas in a scale entry.
func TestKubectlServerSideApply(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	f := k.file("d.yaml", strings.Replace(ssaDeployment, "%s", "2", 1))
	if out := k.ok("apply", "--server-side", "-f", f); !strings.Contains(out, "deployment.apps/web serverside-applied") {
		t.Fatalf("apply --server-side: %s", out)
	}
	es := managedEntries(t, k, "deployment", "web")
	e := entryOf(es, "kubectl")
	if e == nil || e.Operation != metav1.ManagedFieldsOperationApply || e.APIVersion != "apps/v1" || e.FieldsType != "FieldsV1" || e.Time == nil ||
		!strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) || !strings.Contains(string(e.FieldsV1.Raw), `k:{\"containerPort\":80,\"protocol\":\"TCP\"}`) {
		t.Fatalf("kubectl's entry: %+v", es)
	}
	// Without --show-managed-fields kubectl hides them (it strips what the server sent).
	if out := k.ok("get", "deployment", "web", "-o", "yaml"); strings.Contains(out, "managedFields") {
		t.Fatalf("managedFields shown without --show-managed-fields:\n%s", out)
	}
	// Applying again is a no-op that still succeeds.
	k.ok("apply", "--server-side", "-f", f)

	// Another manager's different replicas: 409 naming kubectl and .spec.replicas.
	other := k.file("other.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n")
	out, err := k.run("apply", "--server-side", "--field-manager", "autoscaler", "-f", other)
	if err == nil || !strings.Contains(out, `conflict with "kubectl"`) || !strings.Contains(out, ".spec.replicas") || !strings.Contains(out, "--force-conflicts") {
		t.Fatalf("conflicting apply: want a conflict naming kubectl and .spec.replicas, got %v\n%s", err, out)
	}
	k.ok("apply", "--server-side", "--field-manager", "autoscaler", "--force-conflicts", "-f", other)
	if out := k.ok("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); out != "5" {
		t.Fatalf("replicas after --force-conflicts: %s", out)
	}
	es = managedEntries(t, k, "deployment", "web")
	if e := entryOf(es, "kubectl"); e == nil || strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
		t.Fatalf("kubectl still owns replicas after the forced apply: %+v", e)
	}
	// kubectl's own apply of 2 now conflicts with the autoscaler.
	if out, err := k.run("apply", "--server-side", "-f", f); err == nil || !strings.Contains(out, `conflict with "autoscaler"`) {
		t.Fatalf("apply after losing replicas: %v\n%s", err, out)
	}

	// kubectl scale (a patch of the scale subresource) gets an entry of its own.
	k.ok("scale", "deployment", "web", "--replicas", "3")
	es = managedEntries(t, k, "deployment", "web")
	if e := entryOf(es, "kubectl"); e == nil {
		t.Fatalf("entries after scale: %+v", es)
	}
	var scaled bool
	for _, e := range es {
		if e.Subresource == "scale" && strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
			scaled = true
		}
	}
	if !scaled {
		t.Fatalf("no scale entry owning replicas: %+v", es)
	}

	// A status write (client-go, as a controller) has its own entry with the subresource.
	d, err := srv.Client.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration = d.Generation
	if _, err := srv.Client.AppsV1().Deployments("default").UpdateStatus(context.Background(), d, metav1.UpdateOptions{FieldManager: "deploy-controller"}); err != nil {
		t.Fatal(err)
	}
	es = managedEntries(t, k, "deployment", "web")
	if e := entryOf(es, "deploy-controller"); e == nil || e.Subresource != "status" || e.Operation != metav1.ManagedFieldsOperationUpdate ||
		!strings.Contains(string(e.FieldsV1.Raw), `"f:observedGeneration"`) || strings.Contains(string(e.FieldsV1.Raw), `"f:spec"`) {
		t.Fatalf("status entry: %+v", es)
	}

	// dry run: answered, nothing stored.
	dry := k.file("dry.yaml", strings.Replace(ssaDeployment, "%s", "2", 1)+"---\n")
	k.ok("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", dry)
	if out := k.ok("get", "deployment", "web", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Fatalf("replicas after a dry run: %s", out)
	}
}

// TestKubectlClientSideThenServerSide: an object created by client-side apply (the
// last-applied annotation) takes `apply --server-side` of the same manifest without a
// conflict (kubectl migrates the client-side manager's entry), and later server-side
// applies drop fields that were only in the client-side configuration.
func TestKubectlClientSideThenServerSide(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n  b: \"2\"\n"
	k.ok("apply", "-f", k.file("cm.yaml", cm))
	es := managedEntries(t, k, "configmap", "cfg")
	if e := entryOf(es, "kubectl-client-side-apply"); e == nil || e.Operation != metav1.ManagedFieldsOperationUpdate {
		t.Fatalf("entries after client-side apply: %+v", es)
	}
	changed := strings.Replace(cm, `a: "1"`, `a: "10"`, 1)
	if out, err := k.run("apply", "--server-side", "-f", k.file("cm2.yaml", changed)); err != nil {
		t.Fatalf("server-side apply over client-side apply: %v\n%s", err, out)
	}
	es = managedEntries(t, k, "configmap", "cfg")
	if e := entryOf(es, "kubectl"); e == nil || e.Operation != metav1.ManagedFieldsOperationApply || !strings.Contains(string(e.FieldsV1.Raw), `"f:a"`) {
		t.Fatalf("entries after the server-side apply: %+v", es)
	}
	if e := entryOf(es, "kubectl-client-side-apply"); e != nil && strings.Contains(string(e.FieldsV1.Raw), `"f:a"`) {
		t.Fatalf("the client-side manager still owns data.a: %+v", es)
	}
	// b dropped from the server-side configuration: removed, kubectl being its only owner.
	k.ok("apply", "--server-side", "-f", k.file("cm3.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"10\"\n"))
	if out := k.ok("get", "configmap", "cfg", "-o", "jsonpath={.data}"); strings.Contains(out, `"b"`) {
		t.Fatalf("data after b was dropped: %s", out)
	}
}

// TestServerSideApplyCRDListTypes: a custom resource whose schema has list-type markers,
// applied by two managers through the REST API; and a CRD itself applied server-side.
func TestServerSideApplyCRDListTypes(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("apply", "--server-side", "-f", k.file("crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
              tags:
                type: array
                x-kubernetes-list-type: set
                items: {type: string}
              mode: {type: string, default: fast}
          status:
            type: object
            properties:
              ready: {type: boolean}
`))
	k.ok("wait", "--for", "condition=established", "crd/widgets.example.com")
	k.ok("apply", "--server-side", "-f", k.file("w1.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  ports: [{name: http, port: 80}]\n  tags: [a]\n"))
	k.ok("apply", "--server-side", "--field-manager", "other", "-f", k.file("w2.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  ports: [{name: metrics, port: 9090}]\n  tags: [b]\n"))
	if out := k.ok("get", "widget", "w", "-o", "jsonpath={.spec.ports[*].name} {.spec.tags} {.spec.mode}"); out != `http metrics ["a","b"] fast` {
		t.Fatalf("merged widget: %s", out)
	}
	// An undeclared field is the client's error, named.
	if out, err := k.run("apply", "--server-side", "-f", k.file("w3.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  colour: red\n")); err == nil || !strings.Contains(out, "colour") {
		t.Fatalf("undeclared field: %v\n%s", err, out)
	}
	// A status apply through the REST API owns status only.
	body := []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":{"ready":true}}`)
	res := srv.Client.CoreV1().RESTClient().Patch(types.ApplyPatchType).AbsPath("/apis/example.com/v1/namespaces/default/widgets/w/status").
		Param("fieldManager", "widget-controller").Body(body).Do(context.Background())
	if err := res.Error(); err != nil {
		t.Fatalf("status apply: %v", err)
	}
	es := managedEntries(t, k, "widget", "w")
	if e := entryOf(es, "widget-controller"); e == nil || e.Subresource != "status" || e.Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("status apply entry: %+v", es)
	}
}

// TestServerSideApplyREST: what kubectl does not show: fieldManager required (422), force
// only for apply, create-by-apply answers 201, a patch on a missing namespace is a 404
// for the namespace, fieldValidation=Strict refuses duplicate fields, and a wasm-free
// mutating admission's defaults are owned by no one.
func TestServerSideApplyREST(t *testing.T) {
	srv := apiservertest.Start(t)
	rc := srv.Client.CoreV1().RESTClient()
	ctx := context.Background()
	pod := []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox}]\n")
	err := rc.Patch(types.ApplyPatchType).AbsPath("/api/v1/namespaces/default/pods/p").Body(pod).Do(ctx).Error()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "fieldManager") {
		t.Fatalf("apply without fieldManager: %v", err)
	}
	var code int
	res := rc.Patch(types.ApplyPatchType).AbsPath("/api/v1/namespaces/default/pods/p").Param("fieldManager", "me").Body(pod).Do(ctx).StatusCode(&code)
	if err := res.Error(); err != nil || code != 201 {
		t.Fatalf("create by apply: %d %v", code, err)
	}
	p, err := srv.Client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e := entryOf(p.ManagedFields, "me"); e == nil || strings.Contains(string(e.FieldsV1.Raw), "terminationMessagePath") {
		t.Fatalf("the applier owns what it applied, not the defaults: %+v", p.ManagedFields)
	}
	if p.Spec.Containers[0].TerminationMessagePath == "" {
		t.Fatalf("applied pod not defaulted")
	}
	err = rc.Patch(types.MergePatchType).AbsPath("/api/v1/namespaces/default/pods/p").Param("force", "true").Body([]byte(`{}`)).Do(ctx).Error()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "force") {
		t.Fatalf("force on a merge patch: %v", err)
	}
	err = rc.Patch(types.ApplyPatchType).AbsPath("/api/v1/namespaces/nowhere/pods/p").Param("fieldManager", "me").Body(pod).Do(ctx).Error()
	if !apierrors.IsNotFound(err) {
		t.Fatalf("apply in a missing namespace: %v", err)
	}
	dup := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: x, a: y}\n")
	err = rc.Patch(types.ApplyPatchType).AbsPath("/api/v1/namespaces/default/configmaps/c").Param("fieldManager", "me").Param("fieldValidation", "Strict").Body(dup).Do(ctx).Error()
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("strict duplicate field: %v", err)
	}
	// An update by client-go (its user agent as the manager) merges into one entry per manager.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "u"}, Data: map[string]string{"a": "1"}}
	if cm, err = srv.Client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cm.Data["b"] = "2"
	if cm, err = srv.Client.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate || cm.ManagedFields[0].Manager == "" {
		t.Fatalf("client-go's create and update: %+v", cm.ManagedFields)
	}
}
