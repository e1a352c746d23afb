package wasmtest

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// SignatureCase makes a case about wasmkube_sign (docs/abi.md section 1.5): the pods that
// must sign as the case's pod does, and then get the same answers from the plugin on the
// case's nodes (the promise that lets the scheduler place one from the other's pass), and
// the pods that must sign differently.
type SignatureCase struct {
	// Equal are pods that must sign exactly as the case's pod does and get the same
	// PreFilter verdict, Filter verdict on every node and score (reasons may differ).
	Equal []v1.Pod `json:"equal,omitempty"`
	// Differ are pods that must sign differently from the case's pod (or be unsignable).
	Differ []v1.Pod `json:"differ,omitempty"`
	// Unsignable, when true, says the case's pod must be unsignable (2): it gets a
	// scheduling pass of its own.
	Unsignable bool `json:"unsignable,omitempty"`
}

// signed is one pod's signature: its code and, when signed, its fragments as one string.
type signed struct {
	code int32
	key  string
}

func (s signed) String() string {
	if s.code != schedwasm.CodeSuccess {
		return "unsignable"
	}
	return s.key
}

func sign(ctx context.Context, pool *wasmhost.Pool, pod *v1.Pod) (signed, error) {
	code, frags, err := schedwasm.Signature(ctx, pool, pod)
	if err != nil {
		return signed{}, err
	}
	return signed{code: code, key: signatureKey(frags)}, nil
}

// runSignature signs the case's pod and its equal and differ pods, compares the
// signatures, runs a cycle on the case's nodes for the pod and each equal pod and
// compares the answers; the case's expect is checked on the pod's own cycle.
func (p *Plugin) runSignature(ctx context.Context, c *Case, pool *wasmhost.Pool) []string {
	if !p.mod.Kinds().Has(schedwasm.Sign) {
		return []string{"the case is about signatures, and the module does not export wasmkube_sign"}
	}
	s := c.Signature
	base, err := sign(ctx, pool, c.Pod)
	if err != nil {
		return failure("wasmkube_sign of pod "+c.Pod.Name, err)
	}
	var diff []string
	switch {
	case s.Unsignable && base.code == schedwasm.CodeSuccess:
		diff = append(diff, fmt.Sprintf("pod %s: want unsignable (2), got signed %s", c.Pod.Name, base))
	case !s.Unsignable && base.code != schedwasm.CodeSuccess:
		diff = append(diff, fmt.Sprintf("pod %s: want signed, got unsignable (2)", c.Pod.Name))
	}
	for i := range s.Differ {
		other := &s.Differ[i]
		got, err := sign(ctx, pool, other)
		if err != nil {
			return append(diff, failure("wasmkube_sign of pod "+podName(other, "differ", i), err)...)
		}
		if got.code == schedwasm.CodeSuccess && base.code == schedwasm.CodeSuccess && got.key == base.key {
			diff = append(diff, fmt.Sprintf("pod %s: want a signature other than pod %s's, got the same %s", podName(other, "differ", i), c.Pod.Name, got))
		}
	}
	// Without nodes only the signatures are compared.
	var want *Outcome
	if len(c.Nodes) > 0 || c.Expect.Unschedulable != nil {
		if want, err = Cycle(ctx, pool, c.Pod, NodeInfos(c.Nodes, c.Pods), CycleOptions{}); err != nil {
			return append(diff, failure("pod "+c.Pod.Name, err)...)
		}
		diff = append(diff, Compare(c.Expect, want)...)
	}
	for i := range s.Equal {
		other := &s.Equal[i]
		name := podName(other, "equal", i)
		got, err := sign(ctx, pool, other)
		if err != nil {
			return append(diff, failure("wasmkube_sign of pod "+name, err)...)
		}
		if got.code != schedwasm.CodeSuccess || base.code != schedwasm.CodeSuccess || got.key != base.key {
			diff = append(diff, fmt.Sprintf("pod %s: want the signature of pod %s, %s, got %s", name, c.Pod.Name, base, got))
			continue
		}
		if want == nil {
			continue
		}
		// A cycle on fresh nodes, as the pod's own: the answers must not depend on the
		// pod before.
		answer, err := Cycle(ctx, pool, other, NodeInfos(c.Nodes, c.Pods), CycleOptions{})
		if err != nil {
			return append(diff, failure("pod "+name, err)...)
		}
		if d := answerDiffer(want, answer); d != "" {
			diff = append(diff, fmt.Sprintf("pods %s and %s sign alike (%s) but get different answers: %s; sign every part of the pod the verdicts read, or answer Unsignable (2)",
				c.Pod.Name, name, base, d))
		}
	}
	return diff
}

// podName names a case's extra pod in messages: its name, or where it is in the case.
func podName(p *v1.Pod, list string, i int) string {
	if p.Name != "" {
		return p.Name
	}
	return fmt.Sprintf("signature.%s[%d]", list, i)
}
