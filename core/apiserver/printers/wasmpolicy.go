package printers

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// WasmPolicy's columns: kubectl get wasmpolicies shows HOOK, MODE, READY (n/m), DIGEST, AGE
// (docs/api-objects.md, "WasmPolicy").
var wasmPolicyColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Hook", Type: "string", Description: policyv1alpha1.WasmPolicySpec{}.SwaggerDoc()["hook"]},
	{Name: "Mode", Type: "string", Description: policyv1alpha1.WasmPolicySpec{}.SwaggerDoc()["mode"]},
	{Name: "Ready", Type: "string", Description: "Components with the current generation Active, of those that should load the policy."},
	{Name: "Digest", Type: "string", Description: "The module's digest, shortened to 12 hex digits (the whole one is status.digest)."},
	ageColumn,
	{Name: "Image", Type: "string", Priority: 1, Description: policyv1alpha1.ModuleSource{}.SwaggerDoc()["image"]},
	{Name: "Rollout", Type: "string", Priority: 1, Description: policyv1alpha1.WasmPolicySpec{}.SwaggerDoc()["rollout"]},
	{Name: "Resolved", Type: "string", Priority: 1, Description: "The generation status.digest was resolved for (image modules; <none> before, or for a file)."},
	{Name: "Released", Type: "string", Priority: 1, Description: policyv1alpha1.WasmPolicyStatus{}.SwaggerDoc()["releasedGeneration"]},
}

func printWasmPolicy(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	p, ok := obj.(*policyv1alpha1.WasmPolicy)
	if !ok {
		return nil, nil, false
	}
	mode := string(p.Spec.Mode)
	if mode == "" {
		mode = string(policyv1alpha1.ModeEnforce)
	}
	digest := "<none>"
	if d := p.Status.Digest; d != "" {
		if hex, ok := strings.CutPrefix(d, "sha256:"); ok && len(hex) > 12 {
			d = "sha256:" + hex[:12]
		}
		digest = d
	}
	src := p.Spec.Module.Image
	if src == "" {
		src = "file:" + p.Spec.Module.File
	}
	ready := fmt.Sprintf("%d/%d", p.Status.ReadyComponents, p.Status.TargetedComponents)
	rollout := string(p.Spec.Rollout)
	if rollout == "" {
		rollout = string(policyv1alpha1.RolloutProgressive)
	}
	gen := func(g int64) string {
		if g == 0 {
			return "<none>"
		}
		return fmt.Sprint(g)
	}
	return []any{p.Name, string(p.Spec.Hook), mode, ready, digest, age(p.CreationTimestamp, now), src,
		rollout, gen(p.Status.ResolvedGeneration), gen(p.Status.ReleasedGeneration)}, nil, true
}

func init() {
	register(policyv1alpha1.SchemeGroupVersion.WithKind("WasmPolicy"), wasmPolicyColumns, printWasmPolicy)
}

// WasmPolicyReport's columns: kubectl get wasmpolicyreports shows whose report on which
// policy, the phase and the generation and digest it speaks of.
var wasmPolicyReportColumns = []metav1.TableColumnDefinition{
	nameColumn,
	{Name: "Policy", Type: "string", Description: policyv1alpha1.WasmPolicyReport{}.SwaggerDoc()["policy"]},
	{Name: "Component", Type: "string", Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["component"]},
	{Name: "Instance", Type: "string", Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["name"]},
	{Name: "Phase", Type: "string", Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["phase"]},
	{Name: "Generation", Type: "integer", Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["observedGeneration"]},
	{Name: "Mode", Type: "string", Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["mode"]},
	ageColumn,
	{Name: "Reason", Type: "string", Priority: 1, Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["reason"]},
	{Name: "Message", Type: "string", Priority: 1, Description: policyv1alpha1.ComponentStatus{}.SwaggerDoc()["message"]},
}

func printWasmPolicyReport(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition, bool) {
	r, ok := obj.(*policyv1alpha1.WasmPolicyReport)
	if !ok {
		return nil, nil, false
	}
	s := r.Status
	return []any{r.Name, r.Policy, s.Component, s.Name, string(s.Phase), s.ObservedGeneration, string(s.Mode), age(r.CreationTimestamp, now), s.Reason, s.Message}, nil, true
}

func init() {
	register(policyv1alpha1.SchemeGroupVersion.WithKind("WasmPolicyReport"), wasmPolicyReportColumns, printWasmPolicyReport)
}
