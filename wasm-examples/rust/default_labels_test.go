package rustexamples_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/plugins/admitwasm/admitwasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// default-labels patches in the labels an object lacks, keeps the ones it has, and sets no
// patch when nothing is missing, through the API server's admission host.
func TestDefaultLabelsThroughTheHost(t *testing.T) {
	path := wasmbuild.Script(t, "wasm-examples/rust/default-labels")
	for _, bad := range []string{``, `{"labels": {}}`, `{"labels": ["team"]}`, `{"labels": {"team": 1}}`, `{"labels": {"a b": "x"}}`, `{"labels": {"team": "a b"}}`} {
		if _, err := admitwasmtest.LoadErr(t, "default-labels", path, bad); err == nil || !strings.Contains(err.Error(), "args.labels") {
			t.Errorf("args %q: load error %v, want the init's rejection naming args.labels", bad, err)
		}
	}
	p := admitwasmtest.Load(t, "default-labels", path, `{"labels": {"team": "platform", "example.com/tier": "web"}}`)
	tests := []struct {
		name   string
		labels map[string]string
		want   map[string]string
		patch  bool
	}{
		{"no labels at all", nil, map[string]string{"team": "platform", "example.com/tier": "web"}, true},
		{"one of them", map[string]string{"team": "shop"}, map[string]string{"team": "shop", "example.com/tier": "web"}, true},
		{"others only", map[string]string{"app": "web"}, map[string]string{"app": "web", "team": "platform", "example.com/tier": "web"}, true},
		{"all of them", map[string]string{"team": "shop", "example.com/tier": "db"}, map[string]string{"team": "shop", "example.com/tier": "db"}, false},
	}
	for _, tt := range tests {
		r := p.Run(t, admitwasmtest.CreatePod(labelledPod("web", tt.labels)))
		if r.Err != nil || !r.Allowed {
			t.Errorf("%s: allowed=%v %q err=%v", tt.name, r.Allowed, r.Message, r.Err)
			continue
		}
		got := r.Object.(*v1.Pod).Labels
		if len(got) != len(tt.want) {
			t.Errorf("%s: labels %v, want %v (patch %s)", tt.name, got, tt.want, r.Patch)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: label %s = %q, want %q (patch %s)", tt.name, k, got[k], v, r.Patch)
			}
		}
		if (r.Patch != nil) != tt.patch {
			t.Errorf("%s: patch %s, want one: %v", tt.name, r.Patch, tt.patch)
		}
		if tt.patch && (len(r.AuditAnnotations) != 1 || r.AuditAnnotations[0].Key != "defaulted") {
			t.Errorf("%s: audit annotations %v, want defaulted=...", tt.name, r.AuditAnnotations)
		}
	}
	if r := p.Run(t, admitwasmtest.DeletePod(labelledPod("web", nil))); !r.Allowed || r.Patch != nil {
		t.Errorf("DELETE: allowed=%v patch %s, want allowed without a patch", r.Allowed, r.Patch)
	}
}
