package modulespec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Each kind's row decides the name rule and the bounds; the rest is the same for all.
func TestValidateNamesTheField(t *testing.T) {
	ok := Spec{Name: "p", Path: "p.wasm"}
	with := func(f func(*Spec)) Spec { s := ok; f(&s); return s }
	for _, tc := range []struct {
		kind string
		spec Spec
		want string // "" when valid
	}{
		{"admission", ok, ""},
		{"scheduler", with(func(s *Spec) { s.Name = "MyFilter" }), ""},
		{"admission", with(func(s *Spec) { s.Name = "MyFilter" }), `name: "MyFilter": must be lowercase`},
		{"kubelet", with(func(s *Spec) { s.Name = "A_b" }), `name: "A_b": `},
		{"kubelet", with(func(s *Spec) { s.Name = "" }), "name: required"},
		{"scheduler", with(func(s *Spec) { s.Path = "" }), "path: required"},
		{"scheduler", with(func(s *Spec) { s.FailurePolicy = "Maybe" }), `failurePolicy: "Maybe": must be Fail or Ignore`},
		{"scheduler", with(func(s *Spec) { s.Timeout = metav1.Duration{Duration: -time.Second} }), "timeout: -1s: must not be negative"},
		{"scheduler", with(func(s *Spec) { s.Timeout = metav1.Duration{Duration: time.Minute} }), ""},
		{"admission", with(func(s *Spec) { s.Timeout = metav1.Duration{Duration: time.Minute} }), "timeout: 1m0s: must be between 0 and 30s"},
		{"kubelet", with(func(s *Spec) { s.MemoryLimit = resource.MustParse("1Ki") }), "memoryLimit: 1Ki: must be between 64Ki and 4Gi"},
		{"kubelet", with(func(s *Spec) { s.MemoryLimit = resource.MustParse("16Mi") }), ""},
		{"scheduler", with(func(s *Spec) { s.Pool = -1 }), "pool: -1: must not be negative"},
		{"admission", with(func(s *Spec) { s.Pool = 300 }), "pool: 300: must be between 1 and 256"},
	} {
		err := tc.spec.Validate(RowOf(tc.kind), nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %+v: %v", tc.kind, tc.spec, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s %+v: got %v, want %q", tc.kind, tc.spec, err, tc.want)
		}
	}
	seen := map[string]bool{}
	if err := ok.Validate(RowOf("admission"), seen); err != nil {
		t.Fatal(err)
	}
	if err := ok.Validate(RowOf("admission"), seen); err == nil || err.Error() != `name: duplicate policy "p"` {
		t.Errorf("a second spec of the same name: %v", err)
	}
}

// A kind's spec embeds Spec inline: its keys stay flat in the file, and a type error
// names the key, not the embedding.
type hookSpec struct {
	Spec `json:",inline"`
	Args json.RawMessage `json:"args,omitempty"`
}

func TestEmbeddedSpecKeepsFlatKeys(t *testing.T) {
	var h hookSpec
	if err := json.Unmarshal([]byte(`{"name":"p","path":"p.wasm","pool":2,"args":{"a":1}}`), &h); err != nil || h.Pool != 2 || h.Name != "p" {
		t.Fatalf("decoded %+v, err %v", h, err)
	}
	err := json.Unmarshal([]byte(`{"name":"p","pool":"many"}`), &h)
	te, ok := err.(*json.UnmarshalTypeError)
	if !ok || FieldPath(te.Field) != "pool" {
		t.Fatalf("type error %v: field %q", err, FieldPath(te.Field))
	}
}

// Resolve reads the file relative to the config's folder; Key changes with the
// declaration and with the bytes, and only with them.
func TestResolveAndKey(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.wasm"), []byte("\x00asm v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := hookSpec{Spec: Spec{Name: "p", Path: "p.wasm"}}
	m, err := s.Resolve(dir)
	if err != nil || m.Path != filepath.Join(dir, "p.wasm") {
		t.Fatalf("resolved %+v, err %v", m, err)
	}
	k := m.Key(s)
	if again, _ := s.Resolve(dir); again.Key(s) != k {
		t.Error("the same declaration and bytes got another key")
	}
	s2 := s
	s2.Args = json.RawMessage(`{"a":1}`)
	if m.Key(s2) == k {
		t.Error("other args, same key")
	}
	if err := os.WriteFile(filepath.Join(dir, "p.wasm"), []byte("\x00asm v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m2, _ := s.Resolve(dir); m2.Key(s) == k {
		t.Error("other bytes, same key")
	}
	if _, err := (&Spec{Name: "q", Path: "missing.wasm"}).Resolve(dir); err == nil || !strings.Contains(err.Error(), "missing.wasm") {
		t.Errorf("a missing file: %v", err)
	}
}
