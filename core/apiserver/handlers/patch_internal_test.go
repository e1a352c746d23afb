package handlers

import (
	"encoding/json"
	"strings"
	"testing"
)

// RFC 7386's examples (appendix A), applied by mergePatch.
func TestMergePatchRFC7386(t *testing.T) {
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		// Large integers are kept as written.
		{`{"n":9007199254740993}`, `{"m":9007199254740995}`, `{"m":9007199254740995,"n":9007199254740993}`},
	}
	for _, c := range cases {
		target, err := decodeJSONValue([]byte(c.target))
		if err != nil {
			t.Fatal(err)
		}
		patch, err := decodeJSONValue([]byte(c.patch))
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(mergePatch(target, patch))
		if err != nil || string(got) != c.want {
			t.Errorf("MergePatch(%s, %s) = %s, %v; want %s", c.target, c.patch, got, err, c.want)
		}
	}
}

func TestCheckPatchDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat(`{"a":[`, n) + strings.Repeat(`]}`, n) }
	cases := []struct {
		body string
		ok   bool
	}{
		{nest(5), true},                          // 10 levels
		{nest(6), false},                         // 12 levels
		{`{"a":"{{{{{{{{{{{{{{{{{{{{"}`, true},   // brackets in strings do not count
		{`{"a":"\"{{{{{{{{{{{{{{{{{{{{"}`, true}, // nor after an escaped quote
		{`[[[[[[[[[[`, true},                     // malformed but shallow: the decoder's to refuse
	}
	for _, c := range cases {
		err := checkPatchDepth([]byte(c.body), 10)
		if (err == nil) != c.ok {
			t.Errorf("checkPatchDepth(%.40s): %v, want ok=%v", c.body, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "the limit is 10 levels") {
			t.Errorf("refusal does not name the limit: %v", err)
		}
	}
}
