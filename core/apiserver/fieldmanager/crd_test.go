package fieldmanager

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
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
              replicas: {type: integer}
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
              args:
                type: array
                x-kubernetes-list-type: atomic
                items: {type: string}
              selector:
                type: object
                x-kubernetes-map-type: atomic
                additionalProperties: {type: string}
              labels:
                type: object
                additionalProperties: {type: string}
          status:
            type: object
            properties:
              ready: {type: boolean}
`

func widgets(t testing.TB) *Manager {
	t.Helper()
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict([]byte(widgetCRD), def); err != nil {
		t.Fatal(err)
	}
	tc, err := CRDTypeConverter(def)
	if err != nil {
		t.Fatal(err)
	}
	return newManager(t, Resource{Kind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Types: tc,
		Custom: true, Subresources: []string{"status"}, ResetFields: DefaultResetFields(true)})
}

func widget(spec string) string {
	return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec:\n" + spec
}

func specOf(t *testing.T, obj any) map[string]any {
	t.Helper()
	u := obj.(*unstructured.Unstructured)
	s, _, _ := unstructured.NestedMap(u.Object, "spec")
	return s
}

// TestCRDListTypes: a custom resource's x-kubernetes-list-type map/set/atomic and
// x-kubernetes-map-type markers decide how two appliers' values combine.
func TestCRDListTypes(t *testing.T) {
	m := widgets(t)
	live := mustApply(t, m, m.New(), "alice", widget(`  ports: [{name: http, port: 80}]
  tags: [a, b]
  args: [--x]
  selector: {app: w}
  labels: {team: a}
`))
	live = mustApply(t, m, live, "bob", widget(`  ports: [{name: metrics, port: 9090}]
  tags: [b, c]
  labels: {tier: web}
`))
	spec := specOf(t, live)
	if ports := spec["ports"].([]any); len(ports) != 2 {
		t.Fatalf("map list: both appliers' items expected, got %v", ports)
	}
	if tags := spec["tags"].([]any); len(tags) != 3 {
		t.Fatalf("set: union expected, got %v", tags)
	}
	if labels := spec["labels"].(map[string]any); len(labels) != 2 {
		t.Fatalf("granular map: both keys expected, got %v", labels)
	}
	if got := owners(t, live, `.spec.tags[="b"]`); strings.Join(got, ",") != "alice,bob" {
		t.Fatalf("owners of the shared set item: %v", got)
	}
	// An atomic list and an atomic map are owned whole: another value conflicts.
	for _, body := range []string{"  args: [--y]\n", "  selector: {app: w, extra: x}\n"} {
		if _, err := applyYAML(t, m, live, "bob", widget(body), false); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `"alice"`) {
			t.Fatalf("atomic %q: want a conflict with alice, got %v", body, err)
		}
	}
	// alice drops her port: only hers goes.
	live = mustApply(t, m, live, "alice", widget("  tags: [a, b]\n  args: [--x]\n  selector: {app: w}\n  labels: {team: a}\n"))
	ports := specOf(t, live)["ports"].([]any)
	if len(ports) != 1 || ports[0].(map[string]any)["name"] != "metrics" {
		t.Fatalf("ports after alice dropped hers: %v", ports)
	}
	// A field the schema does not declare is the client's error.
	if _, err := applyYAML(t, m, live, "bob", widget("  colour: red\n"), false); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown field: %v", err)
	}
}

// TestCRDStatus: a main-resource apply does not own status; a status apply owns only
// status, in its own entry.
func TestCRDStatus(t *testing.T) {
	m := widgets(t)
	live := mustApply(t, m, m.New(), "alice", widget("  replicas: 1\n")+"status: {ready: true}\n")
	if got := owners(t, live, ".status.ready"); len(got) != 0 {
		t.Fatalf("status owned by a main-resource apply: %v", got)
	}
	out, _, err := m.Apply(live.DeepCopyObject(), []byte(widget("  replicas: 7\n")+"status: {ready: true}\n"),
		ApplyOptions{Manager: "controller", Subresource: "status"})
	if err != nil {
		t.Fatal(err)
	}
	if got := owners(t, out, ".status.ready"); strings.Join(got, ",") != "controller" {
		t.Fatalf("owners of status after a status apply: %v", got)
	}
	if got := owners(t, out, ".spec.replicas"); strings.Join(got, ",") != "alice" {
		t.Fatalf("owners of spec after a status apply: %v", got)
	}
	for _, e := range managedOf(out) {
		if e.Manager == "controller" && e.Subresource != "status" {
			t.Fatalf("status entry without its subresource: %+v", e)
		}
	}
}
