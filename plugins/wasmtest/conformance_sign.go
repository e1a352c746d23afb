package wasmtest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/plugins/schedwasm"
)

// checkSignature is the rule of docs/abi.md section 1.5: pods whose wasmkube_sign
// fragments are equal get the same answers (PreFilter verdict, each node's Filter
// verdict, each node's score) on the same nodes, since the scheduler places the second
// from the first one's pass. It signs the fixture pods and variants of them (renamed,
// relabelled, annotated, other requests, tolerations, node selector, namespace), and runs
// a cycle for every pod that shares its signature with another.
func checkSignature(ctx context.Context, p *Plugin, o ConformanceOptions) ([]string, string) {
	if !p.mod.Kinds().Has(schedwasm.Sign) {
		return nil, "the module does not export wasmkube_sign: the pods it sees are never batched"
	}
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff, ""
	}
	defer pool.Close()
	groups := map[string][]*v1.Pod{}
	var keys []string
	for _, pod := range signVariants() {
		code, frags, err := schedwasm.Signature(ctx, pool, pod)
		if err != nil {
			diff = append(diff, failure("wasmkube_sign of pod "+pod.Namespace+"/"+pod.Name, err)...)
			continue
		}
		if code != schedwasm.CodeSuccess {
			continue // unsignable: scheduled by a full pass
		}
		k := signatureKey(frags)
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pod)
	}
	nodes := fixtureNodes(40)
	for _, k := range keys {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		base, err := Cycle(ctx, pool, g[0], nodes, CycleOptions{})
		if err != nil {
			return failure("pod "+g[0].Name, err), ""
		}
		for _, other := range g[1:] {
			got, err := Cycle(ctx, pool, other, nodes, CycleOptions{})
			if err != nil {
				return failure("pod "+other.Name, err), ""
			}
			if d := answerDiffer(base, got); d != "" {
				diff = append(diff, fmt.Sprintf("pods %s/%s and %s/%s have equal signatures (%s) but different answers: %s; sign every part of the pod the verdicts read, or answer Unsignable (2)",
					g[0].Namespace, g[0].Name, other.Namespace, other.Name, k, d))
				break
			}
		}
	}
	return diff, ""
}

// signatureKey is the fragments of one pod as one comparable string, in key order.
func signatureKey(frags []schedwasm.SignFragment) string {
	parts := make([]string, len(frags))
	for i, f := range frags {
		parts[i] = fmt.Sprintf("%q=%q", f.Key, f.Value)
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ", ") + "}"
}

// answerDiffer is differ without the reasons' wording: two pods may be rejected in words
// that name them.
func answerDiffer(a, b *Outcome) string {
	if (a.Unschedulable == nil) != (b.Unschedulable == nil) {
		return fmt.Sprintf("PreFilter rejection %v vs %v", deref(a.Unschedulable), deref(b.Unschedulable))
	}
	for _, n := range sortedKeys(a.Verdicts) {
		if va, vb := a.Verdicts[n], b.Verdicts[n]; va.Passed != vb.Passed {
			return fmt.Sprintf("node %s %s vs %s", n, describe(va), describe(vb))
		}
	}
	for _, n := range sortedKeys(a.Scores) {
		if a.Scores[n] != b.Scores[n] {
			return fmt.Sprintf("node %s scored %d vs %d", n, a.Scores[n], b.Scores[n])
		}
	}
	return ""
}

// signVariants are the fixture pods and, for each, pods that differ from it in one way.
func signVariants() []*v1.Pod {
	var out []*v1.Pod
	for _, base := range fixturePods() {
		out = append(out, base)
		variant := func(what string, change func(p *v1.Pod)) {
			p := base.DeepCopy()
			p.Name = base.Name + "-" + what
			p.UID = types.UID("uid-" + p.Name)
			change(p)
			out = append(out, p)
		}
		variant("renamed", func(*v1.Pod) {})
		variant("relabelled", func(p *v1.Pod) { p.Labels = map[string]string{"app": "other", "tier": "backend"} })
		variant("annotated", func(p *v1.Pod) {
			p.Annotations = map[string]string{"wasmkube.io/zone": "zone-a", "note": "x"}
		})
		variant("bigger", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m"), v1.ResourceMemory: resource.MustParse("7Gi")}
		})
		variant("tolerating", func(p *v1.Pod) {
			p.Spec.Tolerations = append(p.Spec.Tolerations, v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists})
		})
		variant("selecting", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "hdd"} })
		variant("elsewhere", func(p *v1.Pod) { p.Namespace = "other" })
	}
	return out
}
