package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	doc := []byte(` {"kind": "Pod", "metadata": {"name": "web", "annotations": {"a": "x}]\"{"},
		"managedFields": [{"f:spec": {"f:containers": {}}}, [1, [2]]]},
		"spec": {"hostNetwork": true, "containers": [{"name": "c"}], "n": -1.5e3, "z": null},
		"we\u0069rd": 1, "empty": {}, "last": "end", "bs": "a\\\\"} `)
	tests := []struct {
		path []string
		want string
		ok   bool
	}{
		{nil, string(doc[1 : len(doc)-1]), true},
		{[]string{"kind"}, `"Pod"`, true},
		{[]string{"metadata", "name"}, `"web"`, true},
		{[]string{"metadata", "annotations", "a"}, `"x}]\"{"`, true},
		{[]string{"spec"}, `{"hostNetwork": true, "containers": [{"name": "c"}], "n": -1.5e3, "z": null}`, true},
		{[]string{"spec", "hostNetwork"}, `true`, true},
		{[]string{"spec", "containers"}, `[{"name": "c"}]`, true},
		{[]string{"spec", "n"}, `-1.5e3`, true},
		{[]string{"spec", "z"}, `null`, true},
		{[]string{"weird"}, `1`, true}, // an escaped key
		{[]string{"last"}, `"end"`, true},
		{[]string{"bs"}, `"a\\\\"`, true}, // an escaped backslash before the closing quote
		{[]string{"empty", "x"}, ``, false},
		{[]string{"status"}, ``, false},
		{[]string{"kind", "x"}, ``, false}, // not an object
		{[]string{"spec", "containers", "0"}, ``, false},
		{[]string{"metadata", "generateName"}, ``, false},
	}
	for _, tt := range tests {
		got, ok := Find(doc, tt.path...)
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("Find(%q) = %q, %v; want %q, %v", tt.path, got, ok, tt.want, tt.ok)
		}
	}
}

// Malformed input (which the host never sends) ends the scan: no panic, no loop, and no
// member found in it that is not a JSON value (the whole document, with no path, is not
// checked).
func TestFindMalformed(t *testing.T) {
	for _, doc := range []string{``, `{`, `{"a"`, `{"a":`, `{"a": "x`, `{"a": [1, {"b": 2}`, `{"a" 1}`, `[1]`, `{"a": 1,`, `"x`, `{1: 2}`, `{"a": {"b": 1`} {
		Find([]byte(doc))
		for _, path := range [][]string{{"a"}, {"a", "b"}, {"z"}} {
			if v, ok := Find([]byte(doc), path...); ok && !json.Valid(v) {
				t.Errorf("Find(%q, %q) = %q: not a JSON value", doc, path, v)
			}
		}
	}
}

func BenchmarkFind(b *testing.B) {
	doc, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"big": strings.Repeat("x", 2000)}}, "spec": map[string]any{"x": 1}})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, ok := Find(doc, "spec"); !ok {
			b.Fatal("not found")
		}
	}
}
