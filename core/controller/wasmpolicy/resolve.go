package wasmpolicy

import (
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
)

// Resolution is what the controller does about a policy's module digest for its current
// generation (PlanResolution).
type Resolution struct {
	// Ask: the registry is asked which manifest Ref (the image's tag) names.
	Ask bool
	Ref string
	// Record (when not Ask): Digest is recorded for the generation without a request: the
	// image names it, or the previous generation resolved the same image and its
	// pullPolicy is not Always.
	Record bool
	Digest string
}

// PlanResolution decides how p's image is resolved for its generation. The tag is
// resolved once per generation, centrally, and recorded in status (digest,
// resolvedGeneration, resolvedImage); every component fetches that digest, so a registry
// that moves the tag later changes nothing until the spec changes. A new generation with
// the same image keeps the digest (as a container image's IfNotPresent keeps what it has),
// unless pullPolicy is Always, which resolves the tag again at every generation. A file
// module, an image by digest already recorded, and a tag under pullPolicy Never (each
// component's cache alone answers) need nothing.
func PlanResolution(p *policyv1alpha1.WasmPolicy) Resolution {
	img := p.Spec.Module.Image
	st := &p.Status
	if img == "" || (st.ResolvedGeneration == p.Generation && st.ResolvedImage == img && st.Digest != "") {
		return Resolution{}
	}
	r, err := name.ParseReference(img, name.StrictValidation)
	if err != nil {
		return Resolution{Ask: true, Ref: img} // the registry client names the error
	}
	if d, ok := r.(name.Digest); ok {
		return Resolution{Record: true, Digest: d.DigestStr()}
	}
	switch pullPolicyOf(p) {
	case policyv1alpha1.PullNever:
		return Resolution{}
	case policyv1alpha1.PullAlways:
		return Resolution{Ask: true, Ref: img}
	}
	if st.ResolvedImage == img && st.Digest != "" {
		return Resolution{Record: true, Digest: st.Digest}
	}
	return Resolution{Ask: true, Ref: img}
}

// centrallyResolved reports whether p's digest is the controller's (an image, not a tag
// under pullPolicy Never) rather than the one the components report.
func centrallyResolved(p *policyv1alpha1.WasmPolicy) bool {
	img := p.Spec.Module.Image
	if img == "" {
		return false
	}
	if r, err := name.ParseReference(img, name.StrictValidation); err == nil {
		if _, ok := r.(name.Digest); ok {
			return true
		}
	}
	return pullPolicyOf(p) != policyv1alpha1.PullNever
}

// pullPolicyOf is p's pull policy, defaulted as the API server defaults it.
func pullPolicyOf(p *policyv1alpha1.WasmPolicy) policyv1alpha1.PullPolicy {
	if p.Spec.Module.PullPolicy != "" {
		return p.Spec.Module.PullPolicy
	}
	d := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Module: p.Spec.Module}}
	policyv1alpha1.SetDefaults(d)
	return d.Spec.Module.PullPolicy
}

// Resolved records digest as the resolution of p's image for its generation.
func Resolved(p *policyv1alpha1.WasmPolicy, digest string) {
	p.Status.Digest, p.Status.ResolvedGeneration, p.Status.ResolvedImage = digest, p.Generation, p.Spec.Module.Image
}

// ResolveFailed turns a rolled-up status into one that says the image could not be
// resolved: Ready False and Degraded True with reason ResolveFailed and the registry's
// error. Components wait (Pending, AwaitingDigest) and keep the revision in force.
func ResolveFailed(st *policyv1alpha1.WasmPolicyStatus, p *policyv1alpha1.WasmPolicy, err error, now time.Time) {
	msg := fmt.Sprintf("module image %s could not be resolved to a digest for generation %d: %v (components keep the revision in force; retried every %s)",
		p.Spec.Module.Image, p.Generation, err, DefaultResolveRetry)
	setCondition(&st.Conditions, metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: p.Generation,
		Reason: ReasonResolveFailed, Message: msg}, now)
	setCondition(&st.Conditions, metav1.Condition{Type: ConditionDegraded, Status: metav1.ConditionTrue, ObservedGeneration: p.Generation,
		Reason: ReasonResolveFailed, Message: msg}, now)
}
