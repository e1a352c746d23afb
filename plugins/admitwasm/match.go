package admitwasm

import (
	"context"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// matcher decides whether a policy sees a request: one of its rules, and both selectors.
type matcher struct {
	rules      []Rule
	namespaces labels.Selector // nil: every namespace
	objects    labels.Selector // nil: every object
}

func newMatcher(spec *PolicySpec) matcher {
	m := matcher{rules: spec.Rules}
	if s := selector(spec.NamespaceSelector); !s.Empty() {
		m.namespaces = s
	}
	if s := selector(spec.ObjectSelector); !s.Empty() {
		m.objects = s
	}
	return m
}

// ruleMatches reports whether a rule names the request's operation, group, version and
// resource, with the subresource semantics of upstream's webhook rules.
func ruleMatches(r *Rule, a *admission.Attributes) bool {
	return anyOf(r.Operations, string(a.Operation)) && anyOf(r.APIGroups, a.Resource.Group) &&
		anyOf(r.APIVersions, a.Resource.Version) && resourceMatches(r.Resources, a.Resource.Resource, a.Subresource)
}

func anyOf(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}

func resourceMatches(list []string, res, sub string) bool {
	for _, r := range list {
		main, rsub, hasSub := strings.Cut(r, "/")
		if main != "*" && main != res {
			continue
		}
		switch {
		case !hasSub:
			if sub == "" {
				return true
			}
		case rsub == "*":
			if sub != "" || main == "*" {
				return true
			}
		case rsub == sub:
			return true
		}
	}
	return false
}

// matches reports whether the policy sees the request. nsLabels reads a namespace's
// labels (for namespaced objects with a namespaceSelector).
func (m *matcher) matches(ctx context.Context, a *admission.Attributes, nsLabels func(ctx context.Context, ns string) labels.Set) bool {
	ok := false
	for i := range m.rules {
		if ruleMatches(&m.rules[i], a) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if m.objects != nil && !objectLabelsMatch(m.objects, a) {
		return false
	}
	if m.namespaces == nil {
		return true
	}
	// As upstream: a Namespace is matched by its own labels; other cluster-scoped
	// objects are not subject to the namespace selector.
	if a.Resource.Group == "" && a.Resource.Resource == "namespaces" {
		return objectLabelsMatch(m.namespaces, a)
	}
	if a.Namespace == "" {
		return true
	}
	return m.namespaces.Matches(nsLabels(ctx, a.Namespace))
}

// objectLabelsMatch: the new or the stored object matches (upstream's objectSelector
// rule, so that a label removal or a DELETE is still seen).
func objectLabelsMatch(sel labels.Selector, a *admission.Attributes) bool {
	for _, o := range []runtime.Object{a.Object, a.OldObject} {
		m := metaOf(o)
		if m != nil && !reflect.ValueOf(m).IsNil() && sel.Matches(labels.Set(m.GetLabels())) {
			return true
		}
	}
	return false
}
