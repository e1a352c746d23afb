package sdk

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestPointer(t *testing.T) {
	tests := []struct {
		tokens []string
		want   string
	}{
		{nil, ""},
		{[]string{""}, "/"},
		{[]string{"spec", "containers", "0", "resources"}, "/spec/containers/0/resources"},
		{[]string{"metadata", "labels", "app.kubernetes.io/name"}, "/metadata/labels/app.kubernetes.io~1name"},
		// "~" is escaped before "/": "~1" in a key must not come back as "/".
		{[]string{"a~1b"}, "/a~01b"},
		{[]string{"~/~"}, "/~0~1~0"},
	}
	for _, tt := range tests {
		if got := Pointer(tt.tokens...); got != tt.want {
			t.Errorf("Pointer(%q) = %q, want %q", tt.tokens, got, tt.want)
		}
	}
	if EscapeToken("plain") != "plain" {
		t.Error("EscapeToken changed a token without ~ or /")
	}
}

func TestPatch(t *testing.T) {
	var p Patch
	if p.Len() != 0 || string(p.Bytes()) != "[]" {
		t.Fatalf("empty patch: %d ops, %s", p.Len(), p.Bytes())
	}
	p.Test("/metadata/name", "web")
	p.Add(Pointer("metadata", "labels", "example.com/team"), "a\"b<")
	p.Replace("/spec/replicas", 3)
	p.Remove("/spec/nodeName")
	p.Add("/spec/containers/0/resources", json.RawMessage(`{"requests": {"cpu": "100m"}}`))
	p.Add("", map[string]any{"whole": nil})
	p.Add("/raw", json.RawMessage(` {"kept": [1, 2]} `))
	p.Add("/badraw", json.RawMessage(`{nope`)) // not JSON: marshalled, which fails
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "patch add /badraw") {
		t.Fatalf("a RawMessage that is not JSON: err %v", err)
	}
	var got []map[string]any
	if err := json.Unmarshal(p.Bytes(), &got); err != nil {
		t.Fatalf("patch %s is not JSON: %v", p.Bytes(), err)
	}
	want := []map[string]any{
		{"op": "test", "path": "/metadata/name", "value": "web"},
		{"op": "add", "path": "/metadata/labels/example.com~1team", "value": "a\"b<"},
		{"op": "replace", "path": "/spec/replicas", "value": 3.0},
		{"op": "remove", "path": "/spec/nodeName"},
		{"op": "add", "path": "/spec/containers/0/resources", "value": map[string]any{"requests": map[string]any{"cpu": "100m"}}},
		{"op": "add", "path": "", "value": map[string]any{"whole": nil}},
		{"op": "add", "path": "/raw", "value": map[string]any{"kept": []any{1.0, 2.0}}},
	}
	if !reflect.DeepEqual(got, want) || p.Len() != len(want) {
		t.Errorf("patch %s\ndecodes to %v\nwant %v", p.Bytes(), got, want)
	}

	p.Reset()
	if p.Len() != 0 || string(p.Bytes()) != "[]" || p.Err() != nil {
		t.Errorf("after Reset: %d ops, %s, err %v", p.Len(), p.Bytes(), p.Err())
	}
}

// A value json.Marshal refuses or a path that is not a JSON Pointer is remembered, and no
// partial operation is left in the patch.
func TestPatchErrors(t *testing.T) {
	var p Patch
	p.Add("/a", 1)
	p.Add("/b", make(chan int))
	p.Add("/c", 2)
	if p.Err() == nil || !strings.Contains(p.Err().Error(), "patch add /b") {
		t.Errorf("err %v, want one naming the operation", p.Err())
	}
	if p.Len() != 1 || string(p.Bytes()) != `[{"op":"add","path":"/a","value":1}]` {
		t.Errorf("patch after the error: %s", p.Bytes())
	}
	p.Reset()
	p.Remove("spec/x")
	if p.Err() == nil || p.Len() != 0 {
		t.Errorf("a path without a leading slash: err %v, %d ops", p.Err(), p.Len())
	}
}

func TestDenyHelpers(t *testing.T) {
	if st := Deny("no"); st.Code != CodeDenied || st.Reason != "no" || CodeDenied != 2 {
		t.Errorf("Deny: %+v", st)
	}
	if st := DenyField("spec.containers[0].image", "must carry a digest"); st.Reason != "spec.containers[0].image: must carry a digest" {
		t.Errorf("DenyField: %q", st.Reason)
	}
	if st := DenyFields(FieldError{"spec.hostNetwork", "no"}, FieldError{"spec.volumes[0].hostPath", "no"}); st.Code != CodeDenied || st.Reason != "spec.hostNetwork: no\nspec.volumes[0].hostPath: no" {
		t.Errorf("DenyFields: %+v", st)
	}
	if !DenyFields().IsSuccess() {
		t.Error("DenyFields without errors denies")
	}
	if st := Denyf("pods %q must carry label %s", "web", "team"); st.Reason != `pods "web" must carry label team` {
		t.Errorf("Denyf: %q", st.Reason)
	}
}
