//go:build !wasip1

package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// namespaceReader serves namespaces from a map, as the API server's watch cache would.
type namespaceReader map[string]*v1.Namespace

func (namespaceReader) Resource(res string) (schema.GroupVersionKind, bool, bool) {
	return v1.SchemeGroupVersion.WithKind("Namespace"), false, res == "namespaces"
}

func (r namespaceReader) Get(_ context.Context, res, _, name string) (runtime.Object, error) {
	if ns, ok := r[name]; ok && res == "namespaces" {
		return ns, nil
	}
	return nil, fmt.Errorf("%s %s: %w", res, name, admission.ErrNotFound)
}

func (r namespaceReader) List(context.Context, string, string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, ns := range r {
		out = append(out, ns)
	}
	return out, nil
}

func startAdmitGuest(t *testing.T) *admitwasmtest.Policy {
	t.Helper()
	p := admitwasmtest.Load(t, "admitguest", wasmbuild.Go(t, "sdk/go/internal/admitguest"), "", "namespaces")
	p.Reader = namespaceReader{
		"shop":  {ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "ns1", ResourceVersion: "1", Labels: map[string]string{"tier": "gold"}}},
		"other": {ObjectMeta: metav1.ObjectMeta{Name: "other", UID: "ns2", ResourceVersion: "1"}},
	}
	return p
}

func guestPod(labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Labels: labels,
			Annotations: map[string]string{"big": strings.Repeat("x", 5000)}},
		Spec: v1.PodSpec{InitContainers: []v1.Container{{Name: "i", Image: "init:1"}},
			Containers: []v1.Container{{Name: "a", Image: "app:2"}, {Name: "b", Image: "side:3"}}},
	}
}

// The SDK's admission accessors, read through the real host, return what the API server
// holds; warnings and audit annotations reach the call's result.
func TestAdmissionSDKThroughTheHost(t *testing.T) {
	p := startAdmitGuest(t)
	if got := p.Pool.Module().Interrupt(); got != wasmhost.InterruptDeadline {
		t.Errorf("Go guest runs with interrupt %s, want %s", got, wasmhost.InterruptDeadline)
	}
	r := p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"report": "", "app": "store"})))
	want := "op=CREATE kind=Pod res=pods obj=shop/web user=alice groups=[system:authenticated] app=store big=5000 missing=false" +
		" old=/false oldnote= images=[init:1 app:2 side:3] request=true object=true oldobject=0 decoded=web/<nil> oldobject=true" +
		" field=2/<nil> oldfield=/true absent=unchanged/<nil>" +
		" | ns=map[tier:gold]/<nil> gone=true forbidden=true list=2/<nil>"
	if r.Err != nil || r.Allowed || r.Message != want {
		t.Errorf("the guest saw (err %v)\n%s\nwant\n%s", r.Err, r.Message, want)
	}
	if len(r.Warnings) != 2 || r.Warnings[0] != "warned by validate" || r.Warnings[1] != "warned 2 times" {
		t.Errorf("warnings %q", r.Warnings)
	}
	if len(r.AuditAnnotations) != 1 || r.AuditAnnotations[0].Key != "seen" || r.AuditAnnotations[0].Value != "web" {
		t.Errorf("audit annotations %+v", r.AuditAnnotations)
	}

	old := guestPod(map[string]string{"app": "before"})
	old.Annotations["note"] = "stored"
	r = p.Run(t, admitwasmtest.UpdatePod(guestPod(map[string]string{"report": ""}), old))
	if !strings.Contains(r.Message, "op=UPDATE") || !strings.Contains(r.Message, "old=before/true oldnote=stored") || !strings.Contains(r.Message, "oldobject=false") ||
		!strings.Contains(r.Message, "oldfield=web/false") {
		t.Errorf("update: the guest saw %s", r.Message)
	}
}

func TestAdmissionSDKResults(t *testing.T) {
	p := startAdmitGuest(t)
	if r := p.Run(t, admitwasmtest.CreatePod(guestPod(nil))); !r.Allowed || r.Patch != nil {
		t.Errorf("nothing to do: allowed=%v patch=%s message=%q, want allowed without a patch", r.Allowed, r.Patch, r.Message)
	}

	r := p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"patch": ""})))
	got, ok := r.Object.(*v1.Pod)
	if !r.Allowed || !ok || got.Annotations["example.com/by~mutate"] != "admitguest" || got.Labels["patch"] != "done" {
		t.Errorf("patch %s: allowed=%v message=%q object %+v", r.Patch, r.Allowed, r.Message, r.Object)
	}

	r = p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"badvalue": ""})))
	var ce *wasmhost.CallError
	if r.Allowed || !errors.As(r.Err, &ce) || !strings.Contains(r.Message, "mutate: patch add /metadata/annotations/x: json: unsupported type") {
		t.Errorf("unmarshalable patch value: allowed=%v message=%q err=%v, want the policy's Error", r.Allowed, r.Message, r.Err)
	}

	r = p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"deny-after-patch": ""})))
	if r.Allowed || r.Message != "changed my mind" || r.Patch != nil {
		t.Errorf("deny after patching: allowed=%v message=%q patch=%s", r.Allowed, r.Message, r.Patch)
	}

	r = p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"skip": ""})))
	if r.Allowed || !errors.As(r.Err, &ce) || !strings.Contains(r.Message, "validate: status code 5 is not an admission result") {
		t.Errorf("a scheduler code: allowed=%v message=%q err=%v, want the SDK's Error", r.Allowed, r.Message, r.Err)
	}

	r = p.Run(t, admitwasmtest.CreatePod(guestPod(map[string]string{"fields": ""})))
	if r.Allowed || r.Message != "spec.hostNetwork: no\nmetadata.name: no" {
		t.Errorf("field errors: allowed=%v message=%q", r.Allowed, r.Message)
	}
}
