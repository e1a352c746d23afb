package admitwasm

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/tidwall/gjson"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// getObjects are what the typed walk is compared on: a pod with a bit of everything, a
// pod as the API server admits it (defaulted, with a token volume), one with a zero
// creation time (omitzero), a Deployment, a ConfigMap with binary data, and a custom
// object (Unstructured marshals itself: the walk declines it).
func getObjects(t testing.TB) []runtime.Object {
	b, err := os.ReadFile("testdata/defaulted-pod.json")
	if err != nil {
		t.Fatal(err)
	}
	var defaulted v1.Pod
	if err := json.Unmarshal(b, &defaulted); err != nil {
		t.Fatal(err)
	}
	replicas := int32(3)
	empty := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare", Labels: map[string]string{}}}
	return []runtime.Object{
		patchPod(), &defaulted, empty,
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
			Template: v1.PodTemplateSpec{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "x"}}}}}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"a.b": "1", "k": "v"}, BinaryData: map[string][]byte{"bin": {1, 2, 3}}},
		&unstructured.Unstructured{Object: map[string]any{"apiVersion": "x.io/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": 3}}},
	}
}

var getPaths = []string{
	"kind", "apiVersion", "metadata", "metadata.name", "metadata.labels", "metadata.labels.team", "metadata.labels.nope",
	`metadata.labels.app\.kubernetes\.io/name`, "metadata.creationTimestamp", "metadata.uid", "metadata.annotations",
	"metadata.ownerReferences", "metadata.ownerReferences.0", "spec", "spec.hostNetwork", "spec.containers",
	"spec.containers.0", "spec.containers.1.name", "spec.containers.5", "spec.containers.01", "spec.containers.name",
	"spec.containers.#", "spec.containers.#.name", "spec.containers.#.{name,resources}", "spec.initContainers.#.{name,resources}",
	"spec.containers.#.{name,p:securityContext.privileged}", "spec.volumes.#.{name,h:hostPath}",
	"spec.ephemeralContainers.#.{name,p:securityContext.privileged}", "spec.containers.#.image", "spec.containers.#.resources.limits",
	"spec.containers.#.resources.limits.cpu", "spec.containers.#.{name,cpu:resources.requests.cpu,x:nope}", "spec.containers.#.{}",
	"spec.containers.#.{name,\"q\":image}", "spec.containers.#.{name,image}.0", "spec.containers.#.ports.#.containerPort",
	"spec.containers.#.{name,ports.0.containerPort}", "spec.containers.#.{a:name,a:image}", "spec.containers.#.{name,",
	"metadata.ownerReferences.#.{kind,name}", "spec.tolerations.#.{key,s:tolerationSeconds}", "spec.containers.0.resources", "spec.containers.0.resources.requests",
	"spec.containers.0.resources.requests.cpu", "spec.containers.0.resources.requests.cpu.x", "spec.containers.0.readinessProbe.httpGet.port",
	"spec.containers.0.readinessProbe.httpGet.port.x", "spec.containers.0.ports.0.containerPort", "spec.containers.0.image.x",
	"spec.volumes.0.projected.sources.#.configMap.name", "spec.volumes.0.emptyDir", "spec.volumes.0.emptyDir.medium",
	"spec.terminationGracePeriodSeconds", "spec.securityContext", "spec.tolerations.#(key==node.kubernetes.io/unreachable).effect",
	"spec.replicas", "spec.template.spec.containers.0.image", "status", "status.phase", "status.conditions", "data", "data.k",
	`data.a\.b`, "data.a", "binaryData", "binaryData.bin", "binaryData.bin.0", "spec.size", "spec|@this", "@this.metadata.name",
	"metadata.*", "metadata.na?e", "..0", "", ".", "metadata.", "metadata..name", "spec.containers.-1", "Spec", "metadata.Name",
	"spec.containers.0.Name", "spec.containers.0.resources.requests.memory",
}

// TestTypedGetMatchesGJSON checks the typed walk against gjson on the whole document for
// every object and path: the same existence, type and raw JSON.
func TestTypedGetMatchesGJSON(t *testing.T) {
	for _, obj := range getObjects(t) {
		for _, path := range getPaths {
			compareGet(t, obj, path)
		}
	}
}

func compareGet(t *testing.T, obj runtime.Object, path string) {
	t.Helper()
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		gvk.Kind, gvk.Version = "Object", "v1"
	}
	doc := objectJSON(obj, gvk.GroupVersion().String(), gvk.Kind)
	want := gjson.GetBytes(doc, path)
	got, ok := typedGet(obj, path)
	if !ok {
		return // the caller then asks gjson on doc: the same answer by construction
	}
	if got.Exists() != want.Exists() || got.Type != want.Type || got.Raw != want.Raw {
		t.Errorf("%T %s: typed walk gives exists=%v %s %q, the document gives exists=%v %s %q", obj, path,
			got.Exists(), got.Type, got.Raw, want.Exists(), want.Type, want.Raw)
	}
}

// FuzzTypedGet compares the two on paths the fuzzer makes up.
func FuzzTypedGet(f *testing.F) {
	for _, p := range getPaths {
		f.Add(p)
	}
	objs := getObjects(f)
	f.Fuzz(func(t *testing.T, path string) {
		for _, obj := range objs {
			compareGet(t, obj, path)
		}
	})
}

func TestTypedGetDeclines(t *testing.T) {
	objs := getObjects(t)
	for _, tc := range []struct {
		obj  runtime.Object
		path string
	}{{objs[0], "kind"}, {objs[0], "apiVersion.x"}, {objs[5], "spec.size"}} {
		if _, ok := typedGet(tc.obj, tc.path); ok {
			t.Errorf("%T %s: the typed walk should leave it to the whole document", tc.obj, tc.path)
		}
	}
	if r, ok := typedGet(objs[0], "spec.containers.#.name"); !ok || r.Raw != `["app","side"]` {
		t.Errorf("spec.containers.#.name = %q, %v", r.Raw, ok)
	}
	// The example policies' multipaths are answered element by element, not declined,
	// also where the list is missing (the pod has no ephemeral containers).
	for _, p := range []string{"spec.containers.#.{name,p:securityContext.privileged}", "spec.containers.#.{name,resources}",
		"spec.ephemeralContainers.#.{name,p:securityContext.privileged}", "spec.ephemeralContainers.#", "spec.volumes.#.{name,h:hostPath}"} {
		if _, ok := typedGet(objs[0], p); !ok {
			t.Errorf("%s: declined", p)
		}
	}
}
