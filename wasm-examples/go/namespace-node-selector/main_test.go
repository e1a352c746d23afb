//go:build !wasip1

package main

import (
	"context"
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
)

const zone = "topology.kubernetes.io/zone"

func TestCheck(t *testing.T) {
	labels := map[string]string{"wasmkube.io/allowed-zones": "zone-a.zone-b", "none": ""}
	sel := map[string]string{zone: "wasmkube.io/allowed-zones", "disk": "none", "rack": "absent"}
	tests := []struct {
		nodeSelector map[string]string
		want         string
	}{
		{nil, ""},
		{map[string]string{zone: "zone-a"}, ""},
		{map[string]string{zone: "zone-b", "other": "x"}, ""},
		{map[string]string{"rack": "r1"}, ""}, // the namespace does not restrict racks
		{map[string]string{zone: "zone-c"}, "spec.nodeSelector[topology.kubernetes.io/zone]: zone-c is not allowed in namespace shop (its label wasmkube.io/allowed-zones allows zone-a, zone-b)"},
		{map[string]string{"disk": "ssd", zone: "zone-a.zone-b"}, "spec.nodeSelector[disk]: ssd is not allowed in namespace shop (its label none allows no value)\n" +
			"spec.nodeSelector[topology.kubernetes.io/zone]: zone-a.zone-b is not allowed in namespace shop (its label wasmkube.io/allowed-zones allows zone-a, zone-b)"},
	}
	for _, tt := range tests {
		var lines []string
		for _, e := range Check(tt.nodeSelector, "shop", labels, sel) {
			lines = append(lines, e.Path+": "+e.Msg)
		}
		if got := strings.Join(lines, "\n"); got != tt.want {
			t.Errorf("Check(%v) =\n%s\nwant\n%s", tt.nodeSelector, got, tt.want)
		}
	}
}

// namespaces serves the namespaces resource from a map, as the API server's watch cache
// would, and counts the reads.
type namespaces struct {
	m     map[string]*v1.Namespace
	reads int
}

func (n *namespaces) Resource(res string) (schema.GroupVersionKind, bool, bool) {
	if res != "namespaces" {
		return schema.GroupVersionKind{}, false, false
	}
	return v1.SchemeGroupVersion.WithKind("Namespace"), false, true
}

func (n *namespaces) Get(_ context.Context, res, _, name string) (runtime.Object, error) {
	n.reads++
	if ns, ok := n.m[name]; ok && res == "namespaces" {
		return ns, nil
	}
	return nil, fmt.Errorf("%s %s: %w", res, name, admission.ErrNotFound)
}

func (n *namespaces) List(_ context.Context, res, _ string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, ns := range n.m {
		out = append(out, ns)
	}
	return out, nil
}

func TestPolicyThroughTheHost(t *testing.T) {
	path := wasmbuild.Go(t, "wasm-examples/go/namespace-node-selector")
	if _, err := admitwasmtest.LoadErr(t, "namespace-node-selector", path, ""); err == nil || !strings.Contains(err.Error(), "get_object") {
		t.Errorf("without a grant: load error %v, want one naming get_object", err)
	}
	if _, err := admitwasmtest.LoadErr(t, "namespace-node-selector", path, `{"selectors": {}}`, "namespaces"); err == nil || !strings.Contains(err.Error(), "args.selectors") {
		t.Errorf("empty selectors: load error %v, want the init's rejection", err)
	}
	p := admitwasmtest.Load(t, "namespace-node-selector", path, "", "namespaces")
	reader := &namespaces{m: map[string]*v1.Namespace{
		"shop": {ObjectMeta: metav1.ObjectMeta{Name: "shop", UID: "ns-shop", ResourceVersion: "1", Labels: map[string]string{"wasmkube.io/allowed-zones": "zone-a.zone-b"}}},
		"open": {ObjectMeta: metav1.ObjectMeta{Name: "open", UID: "ns-open", ResourceVersion: "1"}},
	}}
	p.Reader = reader
	pod := func(ns, z string) *v1.Pod {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
		if z != "" {
			p.Spec.NodeSelector = map[string]string{zone: z}
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *v1.Pod
		allowed bool
		msg     string
	}{
		{"allowed zone", pod("shop", "zone-a"), true, ""},
		{"other zone", pod("shop", "zone-c"), false, "spec.nodeSelector[topology.kubernetes.io/zone]: zone-c is not allowed in namespace shop (its label wasmkube.io/allowed-zones allows zone-a, zone-b)"},
		{"no zone selected", pod("shop", ""), true, ""},
		{"unrestricted namespace", pod("open", "zone-z"), true, ""},
	}
	for _, tt := range tests {
		r := p.Run(t, admitwasmtest.CreatePod(tt.pod))
		if r.Err != nil || r.Allowed != tt.allowed || r.Message != tt.msg {
			t.Errorf("%s: allowed=%v message=%q err=%v, want allowed=%v message=%q", tt.name, r.Allowed, r.Message, r.Err, tt.allowed, tt.msg)
		}
	}
	if reader.reads != 3 {
		t.Errorf("%d namespace reads, want 3: a pod without a zone selector reads nothing", reader.reads)
	}
	// A namespace the cache does not hold is the policy's Error: its failurePolicy decides.
	if r := p.Run(t, admitwasmtest.CreatePod(pod("gone", "zone-a"))); r.Allowed || r.Err == nil || !strings.Contains(r.Message, "namespaces gone: not found") {
		t.Errorf("missing namespace: allowed=%v message=%q err=%v, want a plugin error", r.Allowed, r.Message, r.Err)
	}
	// A grant of other resources loads, but reading namespaces is FORBIDDEN.
	cm := admitwasmtest.Load(t, "namespace-node-selector", path, "", "configmaps")
	cm.Reader = reader
	if r := cm.Run(t, admitwasmtest.CreatePod(pod("shop", "zone-a"))); r.Allowed || r.Err == nil || !strings.Contains(r.Message, "not granted to this policy") {
		t.Errorf("namespaces not granted: allowed=%v message=%q err=%v, want a plugin error", r.Allowed, r.Message, r.Err)
	}
}
