package admitwasm

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// patchPod has a bit of everything the typed route walks: maps, slices of structs,
// pointers, embedded (inline) structs, quantities, IntOrString, times, and omitempty
// fields that are empty.
func patchPod() *v1.Pod {
	yes, grace := true, int64(30)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1", Labels: map[string]string{"team": "a", "app.kubernetes.io/name": "web"},
			CreationTimestamp: metav1.Date(2026, 1, 2, 3, 4, 5, 0, metav1.Now().Location())},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "setup", Image: "busybox:1.36"}},
			Containers: []v1.Container{
				{Name: "app", Image: "busybox:1.36", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 80}},
					Env:            []v1.EnvVar{{Name: "A", Value: "1"}},
					ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}},
					Resources:      v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}}},
				{Name: "side", Image: "busybox:1.36", SecurityContext: &v1.SecurityContext{Privileged: &yes}},
			},
			Volumes:                       []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			TerminationGracePeriodSeconds: &grace,
			RestartPolicy:                 v1.RestartPolicyAlways,
		},
	}
}

// patchCases are patches the typed route must handle itself (typed: true) and ones it
// should leave to the JSON route; either way the result must be the JSON route's.
var patchCases = []struct {
	patch string
	typed bool
}{
	{`[]`, true},
	{`[{"op":"add","path":"/metadata/labels/b","value":"2"}]`, true},
	{`[{"op":"add","path":"/metadata/labels/team","value":"b"}]`, true},
	{`[{"op":"replace","path":"/metadata/labels/team","value":"b"}]`, true},
	{`[{"op":"remove","path":"/metadata/labels/team"}]`, true},
	{`[{"op":"add","path":"/metadata/labels/app.kubernetes.io~1name","value":"x"}]`, true},
	{`[{"op":"add","path":"/metadata/annotations","value":{"a":"b"}}]`, true},
	{`[{"op":"add","path":"/metadata/annotations/a","value":"b"}]`, false}, // no annotations: the parent is missing
	{`[{"op":"add","path":"/spec/containers/1/resources","value":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m","memory":"256Mi"}}}]`, true},
	{`[{"op":"add","path":"/spec/initContainers/0/resources/requests","value":{"cpu":"1"}}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"64Mi"}]`, true},
	{`[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"2"}]`, true},
	{`[{"op":"replace","path":"/spec/containers/0/resources/requests/memory","value":"2"}]`, false}, // no such key
	{`[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}]`, true},
	{`[{"op":"replace","path":"/spec/containers/1/securityContext/privileged","value":false}]`, true},
	{`[{"op":"remove","path":"/spec/containers/1/securityContext"}]`, true},
	{`[{"op":"remove","path":"/spec/containers/0/securityContext"}]`, false}, // nil: not in the document
	{`[{"op":"add","path":"/spec/containers/0/securityContext/privileged","value":true}]`, false},
	{`[{"op":"add","path":"/spec/containers/-","value":{"name":"extra","image":"busybox:1.36"}}]`, true},
	{`[{"op":"add","path":"/spec/containers/0","value":{"name":"first","image":"busybox:1.36"}}]`, true},
	{`[{"op":"add","path":"/spec/containers/2","value":{"name":"last","image":"busybox:1.36"}}]`, true},
	{`[{"op":"add","path":"/spec/containers/3","value":{"name":"x","image":"busybox:1.36"}}]`, false},
	{`[{"op":"remove","path":"/spec/containers/0"}]`, true},
	{`[{"op":"remove","path":"/spec/containers/2"}]`, false},
	{`[{"op":"replace","path":"/spec/containers/0/env/0/value","value":"2"}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"B","value":"3"}}]`, true},
	{`[{"op":"add","path":"/spec/volumes/0/emptyDir","value":{"medium":"Memory"}}]`, true}, // through the inline VolumeSource
	{`[{"op":"add","path":"/spec/volumes/-","value":{"name":"cfg","configMap":{"name":"c"}}}]`, true},
	{`[{"op":"add","path":"/spec/nodeSelector","value":{"zone":"a"}}]`, true},
	{`[{"op":"add","path":"/spec/priorityClassName","value":"high"}]`, true},
	{`[{"op":"replace","path":"/spec/priorityClassName","value":"high"}]`, false}, // empty: omitted
	{`[{"op":"replace","path":"/spec/restartPolicy","value":"Never"}]`, true},
	{`[{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":5}]`, true},
	{`[{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":"5"}]`, false},
	{`[{"op":"add","path":"/spec/tolerations","value":[{"key":"k","operator":"Exists","effect":"NoSchedule"}]}]`, true},
	{`[{"op":"test","path":"/spec/containers/0/name","value":"app"},{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`, true},
	{`[{"op":"test","path":"/spec/containers/0/name","value":"nope"},{"op":"replace","path":"/spec/containers/0/image","value":"x"}]`, false},
	{`[{"op":"test","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"100m"}}}]`, true},
	{`[{"op":"add","path":"/metadata/creationTimestamp","value":"2026-02-03T04:05:06Z"}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/readinessProbe/httpGet/port","value":8080}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/resources/requests/cpu/x","value":1}]`, false}, // into a Quantity
	{`[{"op":"add","path":"/spec/containers/0/Image","value":"x"}]`, false},                  // a name of another case
	{`[{"op":"add","path":"/spec/containers/0/resources","value":{"Requests":{"cpu":"1"}}}]`, false},
	{`[{"op":"add","path":"/spec/bogus","value":1}]`, false},
	{`[{"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"1"},"bogus":1}}]`, false},
	{`[{"op":"add","path":"/spec/containers/0/ports/0/containerPort","value":"80"}]`, false},
	{`[{"op":"add","path":"/spec/containers/01/image","value":"x"}]`, false},
	{`[{"op":"add","path":"/spec/containers/-1/image","value":"x"}]`, false},
	{`[{"op":"replace","path":"/metadata/name","value":"other"}]`, true},
	{`[{"op":"remove","path":"/metadata/uid"}]`, true},
	{`[{"op":"replace","path":"/kind","value":"Service"}]`, false},
	{`[{"op":"replace","path":"","value":{}}]`, false},
	{`[{"op":"move","from":"/metadata/labels/team","path":"/metadata/labels/owner"}]`, false},
	{`[{"op":"copy","from":"/metadata/labels/team","path":"/metadata/labels/owner"}]`, false},
	{`[{"op":"add","path":"/metadata/labels/x"}]`, false},
	{`[{"op":"frobnicate","path":"/metadata/labels/x"}]`, false},
	{`[{"op":"add","path":"metadata/labels/x","value":"1"}]`, false},
	{`[{"op":"add","path":"/metadata/labels/x~2","value":"1"}]`, false},
	{`[{"op":"add","path":"/spec/containers/0/resources","value":null}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/args","value":["a","b"]}]`, true},
	{`[{"op":"add","path":"/spec/containers/0/args/0","value":"a"}]`, false}, // no args: null there
	{`[1]`, false},
	{`[{"op":"add","path":"/metadata/labels/b","value":"2","Path":"/metadata/labels/c"}]`, false}, // a member in another case
	{`[{"op":"add","path":"/metadata/labels/b","value":"2","comment":"ignored"}]`, true},          // an unknown member
	{`[{"op":"add","path":"/metadata/labels","value":{"Op":"1","path":"2"}}]`, true},              // op-like keys inside a value
	{`[{"op":"add","path":"/metadata/labels/b","value":"2","path":"/metadata/labels/c"}]`, true},  // the last duplicate wins
	{`[{"op":1,"path":"/metadata/labels/b","value":"2"}]`, false},
	{`[{"op":"add","path":"/metadata/labels/b","value":"2"} 1]`, false},
	{`[null]`, false},
	{`[{"op":"add","path":"/metadata/labels/z","value":"1"},{"op":"move","from":"/metadata/labels/team","path":"/metadata/labels/owner"}]`, false}, // declined after a change
	{`[{"op":"replace","path":"/spec/containers/0/readinessProbe/httpGet/path","value":"/healthz"}]`, true},                                        // through two pointers
	{`[{"op":"replace","path":"/spec/containers/0/ports/0/containerPort","value":81},{"op":"add","path":"/spec/containers/0/ports/-","value":{"containerPort":82}}]`, true},
	{`[{"op":"add","path":"/metadata/labels/b","value":"2"},{"op":"remove","path":"/metadata/labels/b"},{"op":"add","path":"/metadata/labels/c","value":"3"}]`, true},
}

// TestTypedPatchMatchesJSONRoute applies each case by ApplyPatch (the typed route when it
// takes the patch) and by the JSON route alone: the same object, or an error from both.
func TestTypedPatchMatchesJSONRoute(t *testing.T) {
	for _, tc := range patchCases {
		t.Run(tc.patch, func(t *testing.T) {
			if _, ok := applyTyped(patchPod(), []byte(tc.patch)); ok != tc.typed {
				t.Errorf("typed route took it: %v, want %v", ok, tc.typed)
			}
			comparePatchRoutes(t, []byte(tc.patch))
		})
	}
}

// The typed route copies on write: a patch leaves the original alone even where the
// original's slices have room to grow in place and the result shares what it did not touch.
func TestTypedPatchLeavesTheOriginal(t *testing.T) {
	pod := patchPod()
	pod.Spec.Containers = append(make([]v1.Container, 0, 8), pod.Spec.Containers...)
	pod.Spec.Containers[0].Env = append(make([]v1.EnvVar, 0, 8), pod.Spec.Containers[0].Env...)
	want := pod.DeepCopy()
	for _, patch := range []string{
		`[{"op":"add","path":"/spec/containers/-","value":{"name":"extra","image":"x"}}]`,
		`[{"op":"add","path":"/spec/containers/0/env/-","value":{"name":"B","value":"2"}}]`,
		`[{"op":"replace","path":"/spec/containers/0/env/0/value","value":"9"}]`,
		`[{"op":"add","path":"/spec/containers/0/resources/requests/memory","value":"1Gi"}]`,
		`[{"op":"replace","path":"/spec/containers/1/securityContext/privileged","value":false}]`,
		`[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"remove","path":"/metadata/labels/team"}]`,
		`[{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":1}]`,
	} {
		out, ok := applyTyped(pod, []byte(patch))
		if !ok {
			t.Fatalf("%s: declined", patch)
		}
		if !equality.Semantic.DeepEqual(pod, want) {
			t.Fatalf("%s changed the original", patch)
		}
		if equality.Semantic.DeepEqual(out, want) {
			t.Fatalf("%s: no change in the result", patch)
		}
	}
	if got := pod.Spec.Containers[:3][2].Name; got != "" {
		t.Fatalf("an append wrote %q into the original's spare capacity", got)
	}
	if got := pod.Spec.Containers[0].Env[:2][1].Name; got != "" {
		t.Fatalf("an append wrote %q into the original's spare capacity", got)
	}
}

func comparePatchRoutes(t *testing.T, patch []byte) {
	pod := patchPod()
	doc := objectJSON(pod, "v1", "Pod")
	want, werr := applyJSON(doc, pod, podGVK, patch)
	got, gerr := ApplyPatch(doc, pod, podGVK, patch)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("error %v, the JSON route's %v", gerr, werr)
	}
	if werr != nil {
		return
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("patched\n%s\nthe JSON route's\n%s", objectJSON(got, "v1", "Pod"), objectJSON(want, "v1", "Pod"))
	}
	if !equality.Semantic.DeepEqual(pod, patchPod()) {
		t.Fatalf("the original object changed")
	}
}

// FuzzApplyPatch checks the two routes agree on any patch (go test -fuzz FuzzApplyPatch
// ./plugins/admitwasm; plain go test runs the cases above as seeds).
func FuzzApplyPatch(f *testing.F) {
	for _, tc := range patchCases {
		f.Add(tc.patch)
	}
	f.Fuzz(func(t *testing.T, patch string) {
		comparePatchRoutes(t, []byte(patch))
	})
}

// A patch value decoded once is reused for later patches (decodedValues), as a copy: two
// requests patched with the same value share no map or pointer, with each other or with
// the memo, and both equal the JSON route's result.
func TestTypedPatchMemoizedValuesAreCopies(t *testing.T) {
	patch := []byte(`[{"op":"add","path":"/spec/containers/0/resources","value":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"cpu":"500m"}}},` +
		`{"op":"add","path":"/spec/containers/1/resources/requests","value":{"cpu":"50m"}},` +
		`{"op":"replace","path":"/spec/containers/1/image","value":"busybox:1.37"}]`)
	var outs []*v1.Pod
	for range 3 {
		comparePatchRoutes(t, patch)
		out, ok := applyTyped(patchPod(), patch)
		if !ok {
			t.Fatal("declined")
		}
		outs = append(outs, out.(*v1.Pod))
	}
	want := outs[2].DeepCopy()
	outs[0].Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("9")
	delete(outs[0].Spec.Containers[0].Resources.Limits, v1.ResourceCPU)
	outs[1].Spec.Containers[1].Resources.Requests[v1.ResourceMemory] = resource.MustParse("1Gi")
	for range 3 {
		comparePatchRoutes(t, patch)
	}
	if !equality.Semantic.DeepEqual(outs[2], want) {
		t.Fatalf("changing one patched pod changed another:\n%s", objectJSON(outs[2], "v1", "Pod"))
	}
	again, _ := applyTyped(patchPod(), patch)
	if !equality.Semantic.DeepEqual(again, want) {
		t.Fatalf("changing a patched pod changed the memo:\n%s", objectJSON(again, "v1", "Pod"))
	}
}

func TestCopierOf(t *testing.T) {
	for _, tc := range []struct {
		t    reflect.Type
		copy bool
	}{
		{reflect.TypeFor[string](), true},
		{reflect.TypeFor[v1.PullPolicy](), true},
		{reflect.TypeFor[int64](), true},
		{reflect.TypeFor[v1.ResourceRequirements](), true},
		{reflect.TypeFor[v1.ResourceList](), true},
		{reflect.TypeFor[v1.Container](), true},
		{reflect.TypeFor[*bool](), false},
		{reflect.TypeFor[[]v1.Container](), false},
		{reflect.TypeFor[map[string]string](), false},
	} {
		if got := copierOf(tc.t) != nil; got != tc.copy {
			t.Errorf("copierOf(%v) != nil is %v, want %v", tc.t, got, tc.copy)
		}
	}
}
