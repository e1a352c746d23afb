package admitwasm

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

func attrs(op admission.Operation, group, version, res, sub, ns string, obj, old runtime.Object) *admission.Attributes {
	return &admission.Attributes{Operation: op, Resource: v1.SchemeGroupVersion.WithResource(res), Subresource: sub, Namespace: ns, Object: obj, OldObject: old,
		Kind: v1.SchemeGroupVersion.WithKind("X")}
}

func podWith(l map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", Labels: l}}
}

func TestRuleMatching(t *testing.T) {
	pods := Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []string{"CREATE", "UPDATE"}}
	all := Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}, Operations: []string{"*"}}
	subs := Rule{APIGroups: []string{""}, APIVersions: []string{"*"}, Resources: []string{"pods/*"}, Operations: []string{"*"}}
	status := Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"*/status"}, Operations: []string{"UPDATE"}}
	star := Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Operations: []string{"DELETE"}}
	deploy := &admission.Attributes{Operation: admission.Create, Resource: appsv1.SchemeGroupVersion.WithResource("deployments")}
	for _, tc := range []struct {
		name string
		r    Rule
		a    *admission.Attributes
		want bool
	}{
		{"pods create", pods, attrs(admission.Create, "", "v1", "pods", "", "a", nil, nil), true},
		{"pods delete not named", pods, attrs(admission.Delete, "", "v1", "pods", "", "a", nil, nil), false},
		{"pods rule, status subresource", pods, attrs(admission.Update, "", "v1", "pods", "status", "a", nil, nil), false},
		{"pods rule, configmaps", pods, attrs(admission.Create, "", "v1", "configmaps", "", "a", nil, nil), false},
		{"pods rule, apps group", pods, deploy, false},
		{"*/* matches a subresource", all, attrs(admission.Update, "", "v1", "pods", "status", "a", nil, nil), true},
		{"*/* matches apps", all, deploy, true},
		{"pods/* matches status", subs, attrs(admission.Update, "", "v1", "pods", "status", "a", nil, nil), true},
		{"pods/* does not match pods", subs, attrs(admission.Update, "", "v1", "pods", "", "a", nil, nil), false},
		{"*/status matches pods/status", status, attrs(admission.Update, "", "v1", "pods", "status", "a", nil, nil), true},
		{"*/status not pods/binding", status, attrs(admission.Update, "", "v1", "pods", "binding", "a", nil, nil), false},
		{"* matches any resource", star, attrs(admission.Delete, "", "v1", "secrets", "", "a", nil, nil), true},
		{"* matches no subresource", star, attrs(admission.Delete, "", "v1", "pods", "eviction", "a", nil, nil), false},
	} {
		if got := ruleMatches(&tc.r, tc.a); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}

func TestSelectors(t *testing.T) {
	rule := []Rule{{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Operations: []string{"*"}}}
	nsLabels := map[string]labels.Set{
		"kube-system": {"kubernetes.io/metadata.name": "kube-system"},
		"team-a":      {"kubernetes.io/metadata.name": "team-a", "wasmkube.io/require-team": "true"},
	}
	get := func(_ context.Context, ns string) labels.Set { return nsLabels[ns] }
	notSystem := &PolicySpec{Rules: rule, NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system"}}}}}
	teams := &PolicySpec{Rules: rule, NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"wasmkube.io/require-team": "true"}}}
	objSel := &PolicySpec{Rules: rule, ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}}
	empty := &PolicySpec{Rules: rule, NamespaceSelector: &metav1.LabelSelector{}, ObjectSelector: &metav1.LabelSelector{}}
	nsObj := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", Labels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}}}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	for _, tc := range []struct {
		name string
		spec *PolicySpec
		a    *admission.Attributes
		want bool
	}{
		{"pod in kube-system, NotIn kube-system", notSystem, attrs(admission.Create, "", "v1", "pods", "", "kube-system", podWith(nil), nil), false},
		{"pod in team-a, NotIn kube-system", notSystem, attrs(admission.Create, "", "v1", "pods", "", "team-a", podWith(nil), nil), true},
		{"pod in an unknown namespace, NotIn kube-system", notSystem, attrs(admission.Create, "", "v1", "pods", "", "gone", podWith(nil), nil), true},
		{"the kube-system namespace itself, by its labels", notSystem, attrs(admission.Update, "", "v1", "namespaces", "", "", nsObj, nsObj), false},
		{"a node is not subject to the namespace selector", teams, attrs(admission.Create, "", "v1", "nodes", "", "", node, nil), true},
		{"pod in a team namespace", teams, attrs(admission.Create, "", "v1", "pods", "", "team-a", podWith(nil), nil), true},
		{"pod in default", teams, attrs(admission.Create, "", "v1", "pods", "", "default", podWith(nil), nil), false},
		{"object selector, new object matches", objSel, attrs(admission.Update, "", "v1", "pods", "", "team-a", podWith(map[string]string{"checked": "yes"}), podWith(nil)), true},
		{"object selector, old object matches (label removed)", objSel, attrs(admission.Update, "", "v1", "pods", "", "team-a", podWith(nil), podWith(map[string]string{"checked": "yes"})), true},
		{"object selector, delete of a matching object", objSel, attrs(admission.Delete, "", "v1", "pods", "", "team-a", nil, podWith(map[string]string{"checked": "yes"})), true},
		{"object selector, neither", objSel, attrs(admission.Create, "", "v1", "pods", "", "team-a", podWith(map[string]string{"checked": "no"}), nil), false},
		{"empty selectors match everything", empty, attrs(admission.Create, "", "v1", "pods", "", "kube-system", podWith(nil), nil), true},
	} {
		m := newMatcher(tc.spec)
		if got, _ := m.matches(context.Background(), tc.a, get); got != tc.want {
			t.Errorf("%s: got %v", tc.name, got)
		}
	}
}
