package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// thingCRD: a storage version v1 and a served v1beta1 of the same schema, a printer column.
const thingCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: things.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns: [{name: Color, type: string, jsonPath: .spec.color}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}, legacy: {type: string}, size: {type: string}}}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {color: {type: string}, legacy: {type: string}, size: {type: string}}}
`

var (
	thingsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	thingsBetaGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1beta1", Resource: "things"}
)

func names(l *unstructured.UnstructuredList) []string {
	var out []string
	for _, it := range l.Items {
		out = append(out, it.GetName())
	}
	return out
}

// Lists of custom objects, served from the objects each store keeps per revision
// (handlers/customlist.go), answer as a list that decodes everything would: every item equal to
// its GET and to its create's answer, selectors, pages with continue and remainingItemCount, a list at an older
// resourceVersion, deletes, the None conversion to another served version, tables and
// YAML, and pruning and defaulting on read after the CRD's schema changes.
func TestCustomObjectLists(t *testing.T) {
	srv := apiservertest.Start(t)
	dc, err := dynamic.NewForConfig(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	createCRD(t, dc, thingCRD, thingsGVR)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := srv.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := dc.Resource(thingsGVR).Namespace("default")
	created := map[string]*unstructured.Unstructured{}
	for i := 0; i < 7; i++ {
		tier := map[bool]string{true: "a", false: "b"}[i%2 == 0]
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Thing",
			"metadata": map[string]any{"name": fmt.Sprintf("t-%d", i), "labels": map[string]any{"tier": tier}},
			"spec":     map[string]any{"color": "red", "legacy": "old", "bogus": "pruned"}}}
		c, err := res.Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created[c.GetName()] = c
	}
	if _, err := dc.Resource(thingsGVR).Namespace("other").Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Thing", "metadata": map[string]any{"name": "elsewhere"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	all := func(gvr schema.GroupVersionResource, opts metav1.ListOptions) *unstructured.UnstructuredList {
		t.Helper()
		l, err := dc.Resource(gvr).Namespace("default").List(ctx, opts)
		if err != nil {
			t.Fatalf("list %s %+v: %v", gvr.Version, opts, err)
		}
		return l
	}
	first := all(thingsGVR, metav1.ListOptions{})
	if got := names(first); !reflect.DeepEqual(got, []string{"t-0", "t-1", "t-2", "t-3", "t-4", "t-5", "t-6"}) {
		t.Fatalf("list = %v", got)
	}
	if first.GetKind() != "ThingList" || first.GetAPIVersion() != "example.com/v1" || first.GetResourceVersion() == "" {
		t.Errorf("list kind %q apiVersion %q resourceVersion %q", first.GetKind(), first.GetAPIVersion(), first.GetResourceVersion())
	}
	for _, it := range first.Items {
		got, err := res.Get(ctx, it.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, it.Object) {
			t.Errorf("list item %s = %v, GET = %v", it.GetName(), it.Object, got.Object)
		}
		// The create's answer is the kept served form a list then reuses (handlers/customlist.go).
		if c := created[it.GetName()]; !reflect.DeepEqual(c.Object, got.Object) {
			t.Errorf("create answered %s = %v, GET = %v", it.GetName(), c.Object, got.Object)
		}
	}
	if again := all(thingsGVR, metav1.ListOptions{}); !reflect.DeepEqual(again.Items, first.Items) {
		t.Errorf("a second list differs from the first")
	}

	if got := names(all(thingsGVR, metav1.ListOptions{LabelSelector: "tier=a"})); !reflect.DeepEqual(got, []string{"t-0", "t-2", "t-4", "t-6"}) {
		t.Errorf("tier=a: %v", got)
	}
	if got := names(all(thingsGVR, metav1.ListOptions{FieldSelector: "metadata.name=t-3"})); !reflect.DeepEqual(got, []string{"t-3"}) {
		t.Errorf("metadata.name=t-3: %v", got)
	}
	if got := names(all(thingsGVR, metav1.ListOptions{LabelSelector: "tier=b", Limit: 2})); !reflect.DeepEqual(got, []string{"t-1", "t-3"}) {
		t.Errorf("tier=b limit 2: %v", got)
	}

	// Pages of 3: 3, 3 and 1, remainingItemCount 4 after the first.
	var paged []string
	cont := ""
	for page := 0; ; page++ {
		l := all(thingsGVR, metav1.ListOptions{Limit: 3, Continue: cont})
		paged = append(paged, names(l)...)
		if page == 0 && (l.GetRemainingItemCount() == nil || *l.GetRemainingItemCount() != 4) {
			t.Errorf("remainingItemCount of the first page = %v, want 4", l.GetRemainingItemCount())
		}
		if cont = l.GetContinue(); cont == "" {
			break
		}
		if page > 3 {
			t.Fatal("more than 3 pages")
		}
	}
	if !reflect.DeepEqual(paged, names(first)) {
		t.Errorf("pages = %v", paged)
	}

	// An update shows in the next list; a list at the first list's resourceVersion shows
	// the old state, and does not hide the new one from the list after it.
	t1, err := res.Get(ctx, "t-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(t1.Object, "blue", "spec", "color")
	if _, err := res.Update(ctx, t1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	color := func(l *unstructured.UnstructuredList, name string) string {
		for _, it := range l.Items {
			if it.GetName() == name {
				c, _, _ := unstructured.NestedString(it.Object, "spec", "color")
				return c
			}
		}
		return "<absent>"
	}
	if c := color(all(thingsGVR, metav1.ListOptions{}), "t-1"); c != "blue" {
		t.Errorf("after the update t-1 is %s", c)
	}
	old := all(thingsGVR, metav1.ListOptions{ResourceVersion: first.GetResourceVersion(), ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if c := color(old, "t-1"); c != "red" || old.GetResourceVersion() != first.GetResourceVersion() {
		t.Errorf("at resourceVersion %s t-1 is %s (list resourceVersion %s)", first.GetResourceVersion(), c, old.GetResourceVersion())
	}
	if c := color(all(thingsGVR, metav1.ListOptions{}), "t-1"); c != "blue" {
		t.Errorf("after the old list t-1 is %s", c)
	}
	if err := res.Delete(ctx, "t-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := names(all(thingsGVR, metav1.ListOptions{})); !reflect.DeepEqual(got, []string{"t-0", "t-1", "t-3", "t-4", "t-5", "t-6"}) {
		t.Errorf("after deleting t-2: %v", got)
	}

	// The other served version: apiVersion rewritten, the v1 objects untouched.
	beta := all(thingsBetaGVR, metav1.ListOptions{})
	for _, it := range beta.Items {
		if it.GetAPIVersion() != "example.com/v1beta1" {
			t.Errorf("v1beta1 list item %s has apiVersion %s", it.GetName(), it.GetAPIVersion())
		}
	}
	if beta.GetAPIVersion() != "example.com/v1beta1" || len(beta.Items) != 6 {
		t.Errorf("v1beta1 list apiVersion %s, %d items", beta.GetAPIVersion(), len(beta.Items))
	}
	for _, it := range all(thingsGVR, metav1.ListOptions{}).Items {
		if it.GetAPIVersion() != "example.com/v1" {
			t.Errorf("v1 list item %s has apiVersion %s after the v1beta1 list", it.GetName(), it.GetAPIVersion())
		}
	}

	// Table (kubectl get) with the printer column, and YAML.
	rc := srv.Client.CoreV1().RESTClient()
	raw, err := rc.Get().AbsPath("/apis/example.com/v1/namespaces/default/things").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if !reflect.DeepEqual(cols, []string{"Name", "Color"}) || len(table.Rows) != 6 || table.Rows[1].Cells[0] != "t-1" || table.Rows[1].Cells[1] != "blue" {
		t.Errorf("table columns %v, %d rows", cols, len(table.Rows))
		for _, r := range table.Rows {
			t.Logf("row %v", r.Cells)
		}
	}
	raw, err = rc.Get().AbsPath("/apis/example.com/v1/namespaces/default/things").SetHeader("Accept", "application/yaml").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML unstructured.UnstructuredList
	if err := yaml.Unmarshal(raw, &fromYAML.Object); err != nil || fromYAML.Object["kind"] != "ThingList" || len(fromYAML.Object["items"].([]any)) != 6 {
		t.Errorf("YAML list: %v: %.300s", err, raw)
	}

	// The schema drops spec.legacy and gains a default for spec.size: reads prune and
	// default the stored objects, as upstream's, without writing them.
	crd, err := dc.Resource(crdsGVR).Get(ctx, "things.example.com", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for i := range versions {
		props := map[string]any{"color": map[string]any{"type": "string"}, "size": map[string]any{"type": "string", "default": "medium"}}
		_ = unstructured.SetNestedMap(versions[i].(map[string]any), props, "schema", "openAPIV3Schema", "properties", "spec", "properties")
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	if _, err := dc.Resource(crdsGVR).Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(what string, u *unstructured.Unstructured) {
		t.Helper()
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		want := map[string]any{"color": "red", "size": "medium"}
		if u.GetName() == "t-1" {
			want["color"] = "blue"
		}
		if !reflect.DeepEqual(spec, want) {
			t.Errorf("%s %s: spec = %v, want %v", what, u.GetName(), spec, want)
		}
	}
	after := all(thingsGVR, metav1.ListOptions{})
	for i := range after.Items {
		check("list", &after.Items[i])
	}
	got, err := res.Get(ctx, "t-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("get", got)
	betaAfter := all(thingsBetaGVR, metav1.ListOptions{})
	for i := range betaAfter.Items {
		check("v1beta1 list", &betaAfter.Items[i])
	}
	// ... and other namespaces' lists and the all-namespaces list agree.
	every, err := dc.Resource(thingsGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ns := map[string]int{}
	for _, it := range every.Items {
		ns[it.GetNamespace()]++
	}
	if ns["default"] != 6 || ns["other"] != 1 || len(ns) != 2 {
		t.Errorf("all namespaces: %v", ns)
	}
}
