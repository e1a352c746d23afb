package wasmpolicy

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// TestStaging: a held load is kept while it is staged under the same key, replaced (and
// closed) when the key changes, closed when no longer staged, and handed over by Take
// only under its key.
func TestStaging(t *testing.T) {
	var closed []string
	loads := 0
	s := NewStaging(func(v string) { closed = append(closed, v) })
	pol := func(name, wasm string) *Policy {
		return &Policy{Name: name, Module: modulespec.Module{Wasm: []byte(wasm)}}
	}
	load := func(p *Policy) (string, error) {
		loads++
		if string(p.Module.Wasm) == "bad" {
			return "", errors.New("does not compile")
		}
		return p.Name + ":" + string(p.Module.Wasm), nil
	}
	a1, b1 := pol("a", "1"), pol("b", "1")
	if errs := s.Stage([]*Policy{a1, b1}, load); len(errs) != 0 || loads != 2 {
		t.Fatalf("errs %v, %d loads", errs, loads)
	}
	if errs := s.Stage([]*Policy{a1, pol("b", "2"), pol("c", "bad")}, load); loads != 4 || errs["c"] == nil || len(errs) != 1 {
		t.Fatalf("second stage: errs %v, %d loads (a kept, b and c loaded)", errs, loads)
	}
	if !slices.Equal(closed, []string{"b:1"}) {
		t.Fatalf("closed %v, want b's first load", closed)
	}
	if _, ok := s.Take("a", pol("a", "2").Key()); ok {
		t.Fatal("Take under another key handed a load over")
	}
	if v, ok := s.Take("a", a1.Key()); !ok || v != "a:1" {
		t.Fatalf("Take: %q %v", v, ok)
	}
	s.Stage(nil, load)
	if !slices.Equal(closed, []string{"b:1", "b:2"}) {
		t.Fatalf("closed %v: a was taken (not closed), b's second load dropped", closed)
	}
}

func TestModuleRefAndHeld(t *testing.T) {
	d := "sha256:" + strings.Repeat("e", 64)
	wp := func(image string, pull policyv1alpha1.PullPolicy, gen int64, st policyv1alpha1.WasmPolicyStatus) *policyv1alpha1.WasmPolicy {
		return &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Generation: gen},
			Spec: policyv1alpha1.WasmPolicySpec{Module: policyv1alpha1.ModuleSource{Image: image, PullPolicy: pull}}, Status: st}
	}
	for _, tt := range []struct {
		name string
		p    *policyv1alpha1.WasmPolicy
		ref  string
		ok   bool
	}{
		{"a file", &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Module: policyv1alpha1.ModuleSource{File: "/m.wasm"}}}, "", true},
		{"not resolved yet", wp("r.example/p/m:v1", "", 2, policyv1alpha1.WasmPolicyStatus{Digest: d, ResolvedGeneration: 1}), "", false},
		{"resolved", wp("r.example/p/m:v1", "", 2, policyv1alpha1.WasmPolicyStatus{Digest: d, ResolvedGeneration: 2}), "r.example/p/m@" + d, true},
		{"by digest", wp("r.example/p/m@"+d, "", 2, policyv1alpha1.WasmPolicyStatus{}), "r.example/p/m@" + d, true},
		{"Never", wp("r.example/p/m:v1", policyv1alpha1.PullNever, 2, policyv1alpha1.WasmPolicyStatus{}), "r.example/p/m:v1", true},
	} {
		if ref, ok := ModuleRef(tt.p); ref != tt.ref || ok != tt.ok {
			t.Errorf("%s: %q %v, want %q %v", tt.name, ref, ok, tt.ref, tt.ok)
		}
	}
	p := wp("r.example/p/m:v1", "", 3, policyv1alpha1.WasmPolicyStatus{ReleasedGeneration: 2})
	if Held(p) {
		t.Error("a Progressive policy is held")
	}
	p.Spec.Rollout = policyv1alpha1.RolloutAllOrNothing
	if !Held(p) {
		t.Error("an AllOrNothing generation not released is not held")
	}
	p.Status.ReleasedGeneration = 3
	if Held(p) {
		t.Error("a released generation is held")
	}
}

// TestLoaderSees: the roll-up's writes (counts, components, conditions) do not wake a
// loader; a new generation, a resolution or a release does; what is stored keeps no
// roll-up.
func TestLoaderSees(t *testing.T) {
	pol := func(gen int64, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "p", "uid": "u1", "generation": gen}, "status": status}}
		v, _ := withoutRollup(u)
		return v.(*unstructured.Unstructured)
	}
	base := map[string]any{"observedGeneration": int64(2), "readyComponents": int64(1), "digest": "sha256:a", "resolvedGeneration": int64(2)}
	with := func(k string, v any) map[string]any {
		m := maps.Clone(base)
		m[k] = v
		return m
	}
	old := pol(2, base)
	if _, ok := pol(2, with("components", []any{map[string]any{"name": "n"}})).Object["status"].(map[string]any)["components"]; ok {
		t.Fatal("status.components kept in the loader's store")
	}
	for _, tt := range []struct {
		name string
		obj  *unstructured.Unstructured
		want bool
	}{
		{"a roll-up count", pol(2, with("readyComponents", int64(2))), false},
		{"a roll-up's components", pol(2, with("components", []any{map[string]any{"name": "n"}})), false},
		{"a new generation", pol(3, base), true},
		{"a resolution", pol(2, with("resolvedGeneration", int64(3))), true},
		{"a release", pol(2, with("releasedGeneration", int64(2))), true},
	} {
		if got := loaderSees(old, tt.obj); got != tt.want {
			t.Errorf("%s: loaderSees %v, want %v", tt.name, got, tt.want)
		}
	}
}
