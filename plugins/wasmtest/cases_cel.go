package wasmtest

import (
	"context"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// RunCEL runs the admission cases of f through a set of ValidatingAdmissionPolicies and
// MutatingAdmissionPolicies (CELPolicies), as Plugin.Run runs them through a module, so
// the same case file checks a wasm policy and the CEL policy it replaces: the mutating
// policies, then the validating ones, as the API server's chain runs them (with upstream's
// reinvocation), on the case's request; the case's objects are the params and
// namespaces the policies read. The answer is compared as a module's: allowed, a
// substring of the refusal (the API server's message: `ValidatingAdmissionPolicy 'p' with
// binding 'b' denied request: ...`), warnings, and the mutated object. Cases that are not
// admission requests fail: CEL policies have no scheduler or kubelet entry points.
func RunCEL(ctx context.Context, set AdmissionSet, f *File) []Result {
	out := make([]Result, 0, len(f.Cases))
	for _, c := range f.Cases {
		start := time.Now()
		diff := runCELCase(ctx, set, &c)
		out = append(out, Result{Name: c.Name, Passed: len(diff) == 0, Diff: diff, Duration: time.Since(start)})
	}
	return out
}

func runCELCase(ctx context.Context, set AdmissionSet, c *Case) []string {
	if c.kind() != "admission" {
		return []string{"the case is a " + c.kind() + " call, and CEL policies (ValidatingAdmissionPolicy, MutatingAdmissionPolicy) judge admission requests only"}
	}
	a, err := c.Request.attributes()
	if err != nil {
		return []string{"the case: " + err.Error()}
	}
	reader, _, err := newObjectReader(c.Objects)
	if err != nil {
		return []string{"the case: " + err.Error()}
	}
	if err := set.SetObjectReader(reader); err != nil {
		return []string{"the case's objects: " + err.Error()}
	}
	ms, vs := set.Plugins()
	var steps []admission.Plugin
	for _, m := range ms {
		steps = append(steps, mutationOnly{m})
	}
	for _, v := range vs {
		steps = append(steps, validationOnly{v})
	}
	chain, err := admission.NewChain(steps...)
	if err != nil {
		return []string{err.Error()}
	}
	res := &admitted{allowed: true, object: a.Object}
	if err := chain.Admit(ctx, a); err != nil {
		// a refusal, or a failure under failurePolicy Fail (which refuses too, and says so)
		res.allowed, res.message = false, err.Error()
	}
	res.warnings, res.object = a.Warnings, a.Object
	return compareAdmission(c.Expect, res)
}

// mutationOnly and validationOnly put one half of a CEL step in the chain (a step of a
// set implements both halves; each runs only in its own phase).
type mutationOnly struct{ admission.MutationInterface }

type validationOnly struct{ admission.ValidationInterface }
