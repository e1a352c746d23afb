package wasmpolicy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

func TestPlanResolution(t *testing.T) {
	d1, d2 := "sha256:"+strings.Repeat("1", 64), "sha256:"+strings.Repeat("2", 64)
	const tag = "127.0.0.1:5000/p/m:v1"
	pol := func(image string, pull policyv1alpha1.PullPolicy, gen int64, st policyv1alpha1.WasmPolicyStatus) *policyv1alpha1.WasmPolicy {
		return &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: gen},
			Spec:   policyv1alpha1.WasmPolicySpec{Module: policyv1alpha1.ModuleSource{Image: image, PullPolicy: pull}},
			Status: st}
	}
	resolved := func(gen int64, image, d string) policyv1alpha1.WasmPolicyStatus {
		return policyv1alpha1.WasmPolicyStatus{Digest: d, ResolvedGeneration: gen, ResolvedImage: image}
	}
	for _, tt := range []struct {
		name string
		p    *policyv1alpha1.WasmPolicy
		want Resolution
	}{
		{"a file", &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Module: policyv1alpha1.ModuleSource{File: "/m.wasm"}}}, Resolution{}},
		{"a new tag", pol(tag, "", 1, policyv1alpha1.WasmPolicyStatus{}), Resolution{Ask: true, Ref: tag}},
		{"resolved for this generation", pol(tag, "", 1, resolved(1, tag, d1)), Resolution{}},
		{"same image, next generation", pol(tag, policyv1alpha1.PullIfNotPresent, 2, resolved(1, tag, d1)), Resolution{Record: true, Digest: d1}},
		{"same image, next generation, Always", pol(tag, policyv1alpha1.PullAlways, 2, resolved(1, tag, d1)), Resolution{Ask: true, Ref: tag}},
		{"another image", pol("127.0.0.1:5000/p/m:v2", "", 2, resolved(1, tag, d1)), Resolution{Ask: true, Ref: "127.0.0.1:5000/p/m:v2"}},
		{"latest defaults to Always", pol("127.0.0.1:5000/p/m", "", 2, resolved(1, "127.0.0.1:5000/p/m", d1)), Resolution{Ask: true, Ref: "127.0.0.1:5000/p/m"}},
		{"by digest", pol("127.0.0.1:5000/p/m@"+d2, "", 2, resolved(1, tag, d1)), Resolution{Record: true, Digest: d2}},
		{"Never: each component's cache", pol(tag, policyv1alpha1.PullNever, 2, policyv1alpha1.WasmPolicyStatus{}), Resolution{}},
	} {
		if got := PlanResolution(tt.p); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// TestPlanReleasesAllOrNothing: an AllOrNothing generation is released once every target
// has it staged (or active) and none failed, never before, and the release is kept.
func TestPlanReleasesAllOrNothing(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	p := &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3},
		Spec:   policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate, Rollout: policyv1alpha1.RolloutAllOrNothing},
		Status: policyv1alpha1.WasmPolicyStatus{ReleasedGeneration: 2}}
	a, b := Target{Component: "apiserver", Name: "a"}, Target{Component: "apiserver", Name: "b"}
	st := func(name string, gen int64, phase policyv1alpha1.Phase) policyv1alpha1.ComponentStatus {
		return policyv1alpha1.ComponentStatus{Name: name, Component: "apiserver", ObservedGeneration: gen, Phase: phase, Reason: "R", Message: "m"}
	}
	targets := []Target{a, b}

	r := Plan(p, targets, map[Target]policyv1alpha1.ComponentStatus{a: st("a", 3, policyv1alpha1.PhaseStaged), b: st("b", 3, policyv1alpha1.PhaseFetching)}, now)
	if r.Status.ReleasedGeneration != 2 {
		t.Fatalf("released %d while b has not staged generation 3", r.Status.ReleasedGeneration)
	}
	if c := meta.FindStatusCondition(r.Status.Conditions, ConditionReady); !strings.Contains(c.Message, "1/2 have it staged") {
		t.Fatalf("Ready: %s", c.Message)
	}
	r = Plan(p, targets, map[Target]policyv1alpha1.ComponentStatus{a: st("a", 3, policyv1alpha1.PhaseStaged), b: st("b", 3, policyv1alpha1.PhaseFailed)}, now)
	c := meta.FindStatusCondition(r.Status.Conditions, ConditionDegraded)
	if r.Status.ReleasedGeneration != 2 || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "no component switches") || !strings.Contains(c.Message, "apiserver b") {
		t.Fatalf("b failed: released %d, Degraded %+v", r.Status.ReleasedGeneration, c)
	}
	r = Plan(p, targets, map[Target]policyv1alpha1.ComponentStatus{a: st("a", 3, policyv1alpha1.PhaseStaged), b: st("b", 3, policyv1alpha1.PhaseStaged)}, now)
	if r.Status.ReleasedGeneration != 3 {
		t.Fatalf("released %d once both staged generation 3", r.Status.ReleasedGeneration)
	}
	// Released, a component that joins (c, not yet reporting) does not take it back.
	p.Status = r.Status
	c3 := Target{Component: "apiserver", Name: "c"}
	r = Plan(p, []Target{a, b, c3}, map[Target]policyv1alpha1.ComponentStatus{a: st("a", 3, policyv1alpha1.PhaseActive), b: st("b", 3, policyv1alpha1.PhaseActive)}, now)
	if r.Status.ReleasedGeneration != 3 {
		t.Fatalf("a joining component took the release back: %d", r.Status.ReleasedGeneration)
	}
	// Progressive: nothing is released.
	p.Spec.Rollout, p.Status = policyv1alpha1.RolloutProgressive, policyv1alpha1.WasmPolicyStatus{}
	if r := Plan(p, targets, map[Target]policyv1alpha1.ComponentStatus{a: st("a", 3, policyv1alpha1.PhaseActive), b: st("b", 3, policyv1alpha1.PhaseActive)}, now); r.Status.ReleasedGeneration != 0 {
		t.Fatalf("a Progressive policy was released: %d", r.Status.ReleasedGeneration)
	}
}

func TestResolveFailed(t *testing.T) {
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	p := &policyv1alpha1.WasmPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 4},
		Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookAdmissionValidate, Module: policyv1alpha1.ModuleSource{Image: "r.example/p/m:v9"}}}
	r := Plan(p, nil, nil, now)
	ResolveFailed(&r.Status, p, errors.New("MANIFEST_UNKNOWN"), now)
	for _, typ := range []string{ConditionReady, ConditionDegraded} {
		c := meta.FindStatusCondition(r.Status.Conditions, typ)
		if c.Reason != ReasonResolveFailed || c.ObservedGeneration != 4 || !strings.Contains(c.Message, "r.example/p/m:v9") || !strings.Contains(c.Message, "MANIFEST_UNKNOWN") {
			t.Errorf("%s: %+v", typ, c)
		}
	}
}
