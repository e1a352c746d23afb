// Package match holds the matching rules several built-in plugins share: node selector
// terms, taints and tolerations, and pod label selectors, with upstream's semantics.
package match

import (
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// NodeSelectorTerms reports whether node matches any of the terms (terms are ORed, the
// requirements of a term ANDed). An empty term matches nothing, as upstream.
func NodeSelectorTerms(node *v1.Node, terms []v1.NodeSelectorTerm) bool {
	for i := range terms {
		if NodeSelectorTerm(node, &terms[i]) {
			return true
		}
	}
	return false
}

// NodeSelectorTerm reports whether node matches one term.
func NodeSelectorTerm(node *v1.Node, t *v1.NodeSelectorTerm) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false
	}
	for i := range t.MatchExpressions {
		r := &t.MatchExpressions[i]
		v, ok := node.Labels[r.Key]
		if !requirement(r.Operator, r.Values, v, ok) {
			return false
		}
	}
	for i := range t.MatchFields {
		r := &t.MatchFields[i]
		if r.Key != "metadata.name" {
			return false
		}
		if !requirement(r.Operator, r.Values, node.Name, true) {
			return false
		}
	}
	return true
}

func requirement(op v1.NodeSelectorOperator, values []string, v string, present bool) bool {
	switch op {
	case v1.NodeSelectorOpIn:
		return present && slices.Contains(values, v)
	case v1.NodeSelectorOpNotIn:
		return !present || !slices.Contains(values, v)
	case v1.NodeSelectorOpExists:
		return present
	case v1.NodeSelectorOpDoesNotExist:
		return !present
	case v1.NodeSelectorOpGt, v1.NodeSelectorOpLt:
		if !present || len(values) != 1 {
			return false
		}
		have, err1 := strconv.ParseInt(v, 10, 64)
		want, err2 := strconv.ParseInt(values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if op == v1.NodeSelectorOpGt {
			return have > want
		}
		return have < want
	}
	return false
}

// NodeSelector reports whether node satisfies pod's spec.nodeSelector and required
// node affinity.
func NodeSelector(pod *v1.Pod, node *v1.Node) bool {
	for k, v := range pod.Spec.NodeSelector {
		if nv, ok := node.Labels[k]; !ok || nv != v {
			return false
		}
	}
	a := pod.Spec.Affinity
	if a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		return NodeSelectorTerms(node, a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)
	}
	return true
}

// Tolerates reports whether toleration t tolerates taint (upstream ToleratesTaint).
func Tolerates(t *v1.Toleration, taint *v1.Taint) bool {
	if len(t.Effect) > 0 && t.Effect != taint.Effect {
		return false
	}
	if len(t.Key) > 0 && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	}
	return false
}

// Tolerated reports whether any of tolerations tolerates taint.
func Tolerated(tolerations []v1.Toleration, taint *v1.Taint) bool {
	for i := range tolerations {
		if Tolerates(&tolerations[i], taint) {
			return true
		}
	}
	return false
}

// FirstUntolerated returns the first taint (with an effect accepted by keep) that no
// toleration tolerates.
func FirstUntolerated(taints []v1.Taint, tolerations []v1.Toleration, keep func(*v1.Taint) bool) (*v1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if keep != nil && !keep(t) {
			continue
		}
		if !Tolerated(tolerations, t) {
			return t, true
		}
	}
	return nil, false
}

// Selector converts a LabelSelector; nil selects nothing, as for affinity terms and
// spread constraints.
func Selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}
