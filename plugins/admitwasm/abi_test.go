package admitwasm_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// pool loads a test module on a fresh host and makes a pool of two instances.
func pool(t *testing.T, wat string, opts ...func(*wasmhost.LoadOptions)) *wasmhost.Pool {
	t.Helper()
	ctx := context.Background()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}})
	if err != nil {
		t.Fatal(err)
	}
	o := wasmhost.LoadOptions{Name: wat, Path: wasmbuild.WAT(t, "plugins/admitwasm/testdata/"+wat+".wat")}
	for _, f := range opts {
		f(&o)
	}
	m, err := h.Load(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(ctx) })
	p, err := m.NewPool(ctx, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func podCreate(name string, labels map[string]string) *admission.Attributes {
	pod := admitwasm.SmokePod()
	pod.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: "default", UID: "u-" + "name", Labels: labels}
	return &admission.Attributes{Operation: admission.Create, Kind: v1.SchemeGroupVersion.WithKind("Pod"),
		Resource: v1.SchemeGroupVersion.WithResource("pods"), Namespace: "default", Name: name, Object: pod}
}

func TestValidateReasonAndWarning(t *testing.T) {
	ctx := context.Background()
	p := pool(t, "require-team")
	if err := admitwasm.Smoke(ctx, p); err != nil {
		t.Fatal(err)
	}
	c := &admitwasm.Call{Kind: admitwasm.Validate, Attributes: podCreate("web", map[string]string{"warn-me": "1"})}
	if err := c.Do(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if c.Code != admitwasm.CodeDenied || c.Reason != `pods "web" must carry label team` {
		t.Fatalf("code %d reason %q", c.Code, c.Reason)
	}
	if len(c.Warnings) != 1 || c.Warnings[0] != "require-team saw web" {
		t.Fatalf("warnings %q", c.Warnings)
	}
	c = &admitwasm.Call{Kind: admitwasm.Validate, Attributes: podCreate("web", map[string]string{"team": "a"})}
	if err := c.Do(ctx, p, nil); err != nil || c.Code != admitwasm.CodeAllowed || len(c.Warnings) != 0 {
		t.Fatalf("labelled pod: code %d err %v warnings %q", c.Code, err, c.Warnings)
	}
}

func TestMutatePatch(t *testing.T) {
	ctx := context.Background()
	p := pool(t, "add-annotation")
	if err := admitwasm.Smoke(ctx, p); err != nil {
		t.Fatal(err)
	}
	a := podCreate("web", nil)
	c := &admitwasm.Call{Kind: admitwasm.Mutate, Attributes: a}
	if err := c.Do(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	pod, ok := c.Patched.(*v1.Pod)
	if !ok || pod.Annotations["mutated-by"] != "add-annotation" || pod.Name != "web" || pod.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("patched %#v", c.Patched)
	}
	if a.Object.(*v1.Pod).Annotations != nil {
		t.Fatal("the call changed the request's object")
	}
}

// admitwasmtest runs a module as the API server does: Mutate, then Validate on the result.
func TestAdmitwasmtestRun(t *testing.T) {
	p := admitwasmtest.Load(t, "require-team", wasmbuild.WAT(t, "plugins/admitwasm/testdata/require-team.wat"), "")
	pod := admitwasm.SmokePod()
	pod.Name = "web"
	r := p.Run(t, admitwasmtest.CreatePod(pod))
	if r.Allowed || r.Message != `pods "web" must carry label team` || r.Err != nil {
		t.Fatalf("%+v", r)
	}
	m := admitwasmtest.Load(t, "add-annotation", wasmbuild.WAT(t, "plugins/admitwasm/testdata/add-annotation.wat"), "")
	r = m.Run(t, admitwasmtest.CreatePod(pod))
	if !r.Allowed || r.Object.(*v1.Pod).Annotations["mutated-by"] != "add-annotation" || pod.Annotations != nil {
		t.Fatalf("%+v", r)
	}
}
