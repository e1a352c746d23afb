// Package latesttest checks that a port of disallow-latest-tag to another language gives
// the Go version's verdict and message on every request (the C and AssemblyScript ports
// use it).
package latesttest

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// imagePod is a pod whose init containers run init and whose app containers run apps.
func imagePod(init []string, apps ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
	for i, img := range init {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: fmt.Sprintf("init%d", i), Image: img})
	}
	for i, img := range apps {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: fmt.Sprintf("app%d", i), Image: img})
	}
	return p
}

// MatchesGo runs the Go disallow-latest-tag and port (in language lang) on the same
// requests and fails t where their verdicts or messages differ.
func MatchesGo(t *testing.T, lang string, port *admitwasmtest.Policy) {
	t.Helper()
	golang := admitwasmtest.Load(t, "disallow-latest-tag-go", wasmbuild.Go(t, "wasm-examples/go/disallow-latest-tag"), "")
	digest := "@sha256:" + strings.Repeat("0123456789abcdef", 4)
	withEphemeral := imagePod(nil, "busybox:1.36")
	withEphemeral.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	var many []string
	for i := 0; i < 100; i++ {
		many = append(many, fmt.Sprintf("registry.example.com/team/app-%03d", i)) // a reason over 1 KiB
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: "default"}}
	requests := []struct {
		name string
		a    *admission.Attributes
	}{
		{"pinned", admitwasmtest.CreatePod(imagePod(nil, "busybox:1.36", "nginx"+digest, "nginx:latest"+digest))},
		{"latest", admitwasmtest.CreatePod(imagePod(nil, "busybox:latest"))},
		{"no tag", admitwasmtest.CreatePod(imagePod(nil, "docker.io/library/busybox"))},
		{"registry port", admitwasmtest.CreatePod(imagePod(nil, "localhost:5000/app", "localhost:5000/app:v2"))},
		{"init and app, repeated", admitwasmtest.CreatePod(imagePod([]string{"busybox"}, "nginx", "busybox", "redis:7", "nginx"))},
		{"tag that starts with latest", admitwasmtest.CreatePod(imagePod(nil, "busybox:latest-slim", "busybox:Latest"))},
		{"unicode", admitwasmtest.CreatePod(imagePod(nil, "registry.example.com/équipe/app"))},
		{"ephemeral", admitwasmtest.UpdatePod(withEphemeral, imagePod(nil, "busybox:1.36"))},
		{"many", admitwasmtest.CreatePod(imagePod(nil, many...))},
		{"delete", admitwasmtest.DeletePod(imagePod(nil, "busybox"))},
		{"not a pod", &admission.Attributes{Operation: admission.Create, Kind: v1.SchemeGroupVersion.WithKind("ConfigMap"),
			Resource: v1.SchemeGroupVersion.WithResource("configmaps"), Namespace: "default", Name: "busybox", Object: cm}},
	}
	denied := 0
	for _, rq := range requests {
		want := golang.Run(t, rq.a)
		got := port.Run(t, rq.a)
		if want.Err != nil || got.Err != nil {
			t.Errorf("%s: Go err %v, %s err %v", rq.name, want.Err, lang, got.Err)
			continue
		}
		if got.Allowed != want.Allowed || got.Message != want.Message {
			t.Errorf("%s: %s allowed=%v %q\nGo allowed=%v %q", rq.name, lang, got.Allowed, got.Message, want.Allowed, want.Message)
		}
		if !want.Allowed {
			denied++
		}
	}
	if denied != 7 {
		t.Errorf("%d of the requests denied, want 7: the cases no longer cover both verdicts", denied)
	}
}
