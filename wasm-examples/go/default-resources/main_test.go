//go:build !wasip1

package main

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	sdk "github.com/wasmkube/wasmkube/sdk/go"
)

func TestParseQuantity(t *testing.T) {
	tests := []struct {
		in   string
		want float64
	}{
		{"100m", 0.1}, {"2", 2}, {"1.5", 1.5}, {"128Mi", 128 << 20}, {"1Gi", 1 << 30}, {"2G", 2e9}, {"1e3", 1000}, {"+3k", 3000}, {".5", 0.5},
	}
	for _, tt := range tests {
		if got, err := ParseQuantity(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseQuantity(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "m", "-1", "1x", "1..2", "abc", "1 Mi"} {
		if _, err := ParseQuantity(bad); err == nil {
			t.Errorf("ParseQuantity(%q) accepted", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Builtin.Check(); err != nil {
		t.Errorf("the built-in defaults: %v", err)
	}
	for _, tt := range []struct {
		d    Defaults
		want string
	}{
		{Defaults{}, "give requests, limits or both"},
		{Defaults{Requests: map[string]string{"cpu": "lots"}}, "args.requests.cpu"},
		{Defaults{Requests: map[string]string{"cpu": "1"}, Limits: map[string]string{"cpu": "500m"}}, "args.requests.cpu: 1 is above the limit 500m"},
	} {
		if err := tt.d.Check(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%+v) = %v, want %q", tt.d, err, tt.want)
		}
	}
}

func TestPlan(t *testing.T) {
	pod := gjson.Parse(`{"spec": {
		"initContainers": [{"name": "setup"}],
		"containers": [
			{"name": "bare", "resources": {}},
			{"name": "sized", "resources": {"limits": {"cpu": "1"}}},
			{"name": "claims", "resources": {"claims": [{"name": "gpu"}]}}
		]}}`)
	var p sdk.Patch
	names := Plan(pod.Get, Defaults{Requests: map[string]string{"cpu": "100m"}, Limits: map[string]string{"cpu": "200m"}}.marshal(), &p)
	if strings.Join(names, ",") != "setup,bare,claims" {
		t.Errorf("defaulted %v, want setup, bare and claims", names)
	}
	want := `[{"op":"add","path":"/spec/initContainers/0/resources","value":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}},` +
		`{"op":"add","path":"/spec/containers/0/resources/requests","value":{"cpu":"100m"}},` +
		`{"op":"add","path":"/spec/containers/0/resources/limits","value":{"cpu":"200m"}},` +
		`{"op":"add","path":"/spec/containers/2/resources/requests","value":{"cpu":"100m"}},` +
		`{"op":"add","path":"/spec/containers/2/resources/limits","value":{"cpu":"200m"}}]`
	if got := string(p.Bytes()); got != want {
		t.Errorf("patch\n%s\nwant\n%s", got, want)
	}
	p.Reset()
	Plan(pod.Get, Defaults{Limits: map[string]string{"cpu": "200m"}}.marshal(), &p)
	if got := string(p.Bytes()); !strings.HasPrefix(got, `[{"op":"add","path":"/spec/initContainers/0/resources","value":{"limits":{"cpu":"200m"}}},`+
		`{"op":"add","path":"/spec/containers/0/resources/limits"`) {
		t.Errorf("limits only: patch %s", got)
	}
}

func container(name string, res v1.ResourceRequirements) v1.Container {
	return v1.Container{Name: name, Image: "busybox:1.36", Resources: res}
}

func TestPolicyThroughTheHost(t *testing.T) {
	path := wasmbuild.Go(t, "wasm-examples/go/default-resources")
	if _, err := admitwasmtest.LoadErr(t, "default-resources", path, `{"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}`); err == nil || !strings.Contains(err.Error(), "args.requests.cpu") {
		t.Errorf("a request above its limit: load error %v, want the init's rejection", err)
	}
	p := admitwasmtest.Load(t, "default-resources", path, `{"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}`)
	own := v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{container("setup", v1.ResourceRequirements{})},
		Containers:     []v1.Container{container("app", v1.ResourceRequirements{}), container("sized", own)},
	}}
	r := p.Run(t, admitwasmtest.CreatePod(pod))
	if !r.Allowed || r.Err != nil {
		t.Fatalf("allowed=%v message=%q err=%v", r.Allowed, r.Message, r.Err)
	}
	got, ok := r.Object.(*v1.Pod)
	if !ok {
		t.Fatalf("patched object %T, want a pod", r.Object)
	}
	want := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}
	for _, c := range []v1.Container{got.Spec.InitContainers[0], got.Spec.Containers[0]} {
		if !equalResources(c.Resources, want) {
			t.Errorf("container %s: resources %+v, want the defaults", c.Name, c.Resources)
		}
	}
	if !equalResources(got.Spec.Containers[1].Resources, own) {
		t.Errorf("container sized: resources %+v, want its own left alone", got.Spec.Containers[1].Resources)
	}
	if len(pod.Spec.Containers[0].Resources.Requests) != 0 {
		t.Error("the request's own object was changed")
	}
	if len(r.AuditAnnotations) != 1 || r.AuditAnnotations[0].Key != "defaulted-containers" || r.AuditAnnotations[0].Value != "setup,app" {
		t.Errorf("audit annotations %+v, want defaulted-containers=setup,app", r.AuditAnnotations)
	}

	// A pod whose containers all have resources gets no patch at all; updates are not changed.
	sized := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sized"}, Spec: v1.PodSpec{Containers: []v1.Container{container("c", own)}}}
	if r := p.Run(t, admitwasmtest.CreatePod(sized)); !r.Allowed || r.Patch != nil {
		t.Errorf("sized pod: allowed=%v patch=%s, want no patch", r.Allowed, r.Patch)
	}
	bare := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}, Spec: v1.PodSpec{Containers: []v1.Container{container("c", v1.ResourceRequirements{})}}}
	if r := p.Run(t, admitwasmtest.UpdatePod(bare, bare.DeepCopy())); !r.Allowed || r.Patch != nil {
		t.Errorf("update: allowed=%v patch=%s, want no patch", r.Allowed, r.Patch)
	}

	// Without args the built-in defaults apply.
	def := admitwasmtest.Load(t, "default-resources", path, "")
	r = def.Run(t, admitwasmtest.CreatePod(bare.DeepCopy()))
	if got, ok := r.Object.(*v1.Pod); !ok || !equalResources(got.Spec.Containers[0].Resources, want) {
		t.Errorf("built-in defaults: %+v (%q)", r.Object, r.Message)
	}
}

func equalResources(a, b v1.ResourceRequirements) bool {
	eq := func(x, y v1.ResourceList) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || v.Cmp(w) != 0 {
				return false
			}
		}
		return true
	}
	return eq(a.Requests, b.Requests) && eq(a.Limits, b.Limits)
}
