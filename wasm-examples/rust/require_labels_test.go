package rustexamples_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

func labelledPod(name string, labels map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

// The verdicts and messages of the Go require-labels (wasm-examples/go/require-labels),
// through the API server's admission host.
func TestRequireLabelsThroughTheHost(t *testing.T) {
	path := wasmbuild.Script(t, "wasm-examples/rust/require-labels")
	for _, bad := range []string{"", `{"labels": []}`, `{"labels": "team"}`, `{"labels": ["a b"]}`, `{"labels": [3]}`} {
		if _, err := admitwasmtest.LoadErr(t, "require-labels", path, bad); err == nil || !strings.Contains(err.Error(), "args") {
			t.Errorf("args %q: load error %v, want the init's rejection naming the args", bad, err)
		}
	}
	p := admitwasmtest.Load(t, "require-labels", path, `{"labels": ["team"]}`)
	tests := []struct {
		name    string
		pod     *v1.Pod
		allowed bool
		msg     string
	}{
		{"labelled", labelledPod("web", map[string]string{"team": "shop"}), true, ""},
		{"empty value still a label", labelledPod("web", map[string]string{"team": ""}), true, ""},
		{"unlabelled", labelledPod("web", map[string]string{"app": "web"}), false, `pods "web" must carry label team`},
		{"no labels at all", labelledPod("web", nil), false, `pods "web" must carry label team`},
	}
	for _, tt := range tests {
		r := p.Run(t, admitwasmtest.CreatePod(tt.pod))
		if r.Err != nil || r.Allowed != tt.allowed || r.Message != tt.msg {
			t.Errorf("%s: allowed=%v message=%q err=%v, want allowed=%v message=%q", tt.name, r.Allowed, r.Message, r.Err, tt.allowed, tt.msg)
		}
	}
	gen := labelledPod("", nil)
	gen.GenerateName = "web-"
	if r := p.Run(t, admitwasmtest.CreatePod(gen)); r.Allowed || r.Message != `pods "web-*" must carry label team` {
		t.Errorf("generateName: allowed=%v message=%q", r.Allowed, r.Message)
	}
	if r := p.Run(t, admitwasmtest.UpdatePod(labelledPod("web", nil), labelledPod("web", map[string]string{"team": "a"}))); r.Allowed {
		t.Error("an UPDATE that drops the label was allowed")
	}
	if r := p.Run(t, admitwasmtest.DeletePod(labelledPod("web", nil))); !r.Allowed {
		t.Errorf("DELETE of an unlabelled pod: %q, want it allowed", r.Message)
	}
	two := admitwasmtest.Load(t, "require-labels", path, `{"labels": ["team", "tier"]}`)
	if r := two.Run(t, admitwasmtest.CreatePod(labelledPod("web", nil))); r.Allowed || r.Message != `pods "web" must carry labels team, tier` {
		t.Errorf("two labels: allowed=%v message=%q", r.Allowed, r.Message)
	}
}
