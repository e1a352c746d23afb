package admitwasm

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

var podGVK = v1.SchemeGroupVersion.WithKind("Pod")

func TestApplyPatch(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Labels: map[string]string{"a": "1"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	doc := objectJSON(pod, "v1", "Pod")
	if !strings.HasPrefix(string(doc), `{"kind":"Pod","apiVersion":"v1","metadata":`) {
		t.Fatalf("object JSON %s", doc)
	}
	out, err := ApplyPatch(doc, pod, podGVK, []byte(`[{"op":"add","path":"/metadata/labels/b","value":"2"},{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.36"}]`))
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.Pod)
	if got.Labels["b"] != "2" || got.Labels["a"] != "1" || got.Spec.Containers[0].Image != "busybox:1.36" || got.Name != "web" || got.TypeMeta != pod.TypeMeta {
		t.Fatalf("patched %+v", got)
	}
	if pod.Labels["b"] != "" {
		t.Fatal("the input object changed")
	}
	if out, err := ApplyPatch(doc, pod, podGVK, []byte(`[]`)); err != nil || out.(*v1.Pod).Name != "web" {
		t.Fatalf("empty patch: %v", err)
	}
	for _, tc := range []struct{ patch, want string }{
		{`{"op":"add"}`, "not a JSON array of RFC 6902 operations"},
		{`not json`, "not a JSON array"},
		{`[{"op":"jump","path":"/x"}]`, "unsupported operation"},
		{`[{"op":"remove","path":"/spec/nothing"}]`, "does not apply"},
		{`[{"op":"replace","path":"/metadata/name","value":"other"}]`, `changes metadata.name from "web" to "other"`},
		{`[{"op":"replace","path":"/metadata/namespace","value":"kube-system"}]`, "changes metadata.namespace"},
		{`[{"op":"remove","path":"/metadata/uid"}]`, "changes metadata.uid"},
		{`[{"op":"replace","path":"/kind","value":"Secret"}]`, "changes kind"},
		{`[{"op":"replace","path":"/apiVersion","value":"v2"}]`, "changes apiVersion"},
		{`[{"op":"add","path":"/spec/bogus","value":1}]`, "not a valid *v1.Pod"},
		{`[{"op":"replace","path":"/spec/containers","value":"x"}]`, "not a valid *v1.Pod"},
	} {
		if _, err := ApplyPatch(doc, pod, podGVK, []byte(tc.patch)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.patch, err, tc.want)
		}
	}
	if _, err := ApplyPatch(nil, nil, podGVK, []byte(`[]`)); err == nil || !strings.Contains(err.Error(), "no object") {
		t.Errorf("delete: %v", err)
	}
}

func TestWasmImports(t *testing.T) {
	bin, err := os.ReadFile(wasmbuild.WAT(t, "plugins/admitwasm/testdata/context.wat"))
	if err != nil {
		t.Fatal(err)
	}
	ims, err := wasmImports(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"wasmkube", "get_object"}, {"wasmkube", "list_objects"}, {"wasmkube", "status_reason"}, {"wasmkube", "warning"}}
	if !slices.Equal(ims, want) {
		t.Fatalf("imports %v, want %v", ims, want)
	}
	if _, err := wasmImports([]byte{0, 'a', 's', 'm', 1, 0, 0, 0, 2, 200}); err == nil {
		t.Fatal("a truncated section parsed")
	}
}

func TestDenial(t *testing.T) {
	a := &admission.Attributes{Name: "web", Kind: v1.SchemeGroupVersion.WithKind("Pod"), Resource: v1.SchemeGroupVersion.WithResource("pods")}
	for _, tc := range []struct {
		reason string
		code   int32
		fields []string
	}{
		{`pods "web" must carry label team`, 403, nil},
		{"error: something", 403, nil},
		{"spec.containers[0].image: must carry a digest", 422, []string{"spec.containers[0].image"}},
		{"spec.nodeSelector[topology.kubernetes.io/zone]: zone-c is not allowed\nspec.nodeSelector[disk]: ssd is not allowed", 422,
			[]string{"spec.nodeSelector[topology.kubernetes.io/zone]", "spec.nodeSelector[disk]"}},
	} {
		var se *apierrors.StatusError
		if !errors.As(denial(a, "p", tc.reason), &se) || se.ErrStatus.Code != tc.code || se.ErrStatus.Message != "admission policy p denied the request: "+tc.reason {
			t.Errorf("%q: %+v", tc.reason, se)
			continue
		}
		var fields []string
		if se.ErrStatus.Details != nil {
			for _, c := range se.ErrStatus.Details.Causes {
				fields = append(fields, c.Field)
			}
		}
		if !slices.Equal(fields, tc.fields) {
			t.Errorf("%q: fields %q, want %q", tc.reason, fields, tc.fields)
		}
	}
}
