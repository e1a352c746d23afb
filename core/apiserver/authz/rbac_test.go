package authz

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// RBAC rule matching as upstream's RuleAllows, and the fixed rules every node has.
func TestRuleAllowsAndNodeRules(t *testing.T) {
	res := func(verb, group, resource, sub, name string) *Attributes {
		return &Attributes{Verb: verb, ResourceRequest: true, Group: group, Resource: resource, Subresource: sub, Name: name}
	}
	url := func(verb, path string) *Attributes { return &Attributes{Verb: verb, Path: path} }
	r := func(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	s := func(x ...string) []string { return x }
	cases := []struct {
		rule rbacv1.PolicyRule
		a    *Attributes
		want bool
	}{
		{r(s("get"), s(""), s("pods")), res("get", "", "pods", "", "p"), true},
		{r(s("get"), s(""), s("pods")), res("list", "", "pods", "", ""), false},
		{r(s("*"), s(""), s("pods")), res("deletecollection", "", "pods", "", ""), true},
		{r(s("get"), s("apps"), s("pods")), res("get", "", "pods", "", ""), false},
		{r(s("get"), s("*"), s("*")), res("get", "apps", "deployments", "scale", ""), true},
		{r(s("get"), s(""), s("pods")), res("get", "", "pods", "log", "p"), false},
		{r(s("get"), s(""), s("pods/log")), res("get", "", "pods", "log", "p"), true},
		{r(s("get"), s(""), s("*/log")), res("get", "", "pods", "log", "p"), true},
		{r(s("get"), s(""), s("*/log")), res("get", "", "pods", "", "p"), false},
		{r(s("get"), s(""), s("configmaps"), "a"), res("get", "", "configmaps", "", "a"), true},
		{r(s("get"), s(""), s("configmaps"), "a"), res("get", "", "configmaps", "", "b"), false},
		{r(s("get"), s(""), s("configmaps"), "a"), res("list", "", "configmaps", "", ""), false},
		{rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/metrics")}, url("get", "/metrics"), true},
		{rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, url("get", "/apis/apps/v1"), true},
		{rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("/apis/*")}, url("get", "/api"), false},
		{rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, url("post", "/x"), false},
		{rbacv1.PolicyRule{Verbs: s("get"), NonResourceURLs: s("*")}, res("get", "", "pods", "", ""), false},
	}
	for i, c := range cases {
		if got := ruleAllows(c.a, &c.rule); got != c.want {
			t.Errorf("case %d: rule %+v on %+v: %v, want %v", i, c.rule, *c.a, got, c.want)
		}
	}
	node := func(a *Attributes) bool {
		for i := range nodeRules {
			if ruleAllows(a, &nodeRules[i]) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		a    *Attributes
		want bool
	}{
		{res("patch", "", "nodes", "status", "n1"), true},
		{res("update", "coordination.k8s.io", "leases", "", "n1"), true},
		{res("patch", "", "pods", "status", "p"), true},
		{res("update", "", "pods", "", "p"), false},
		{res("delete", "", "pods", "", "p"), true},
		{res("deletecollection", "", "pods", "", ""), false},
		{res("create", "", "events", "", ""), true},
		{res("list", "", "services", "", ""), true},
		{res("create", "apps", "deployments", "", ""), false},
		{res("get", "apps", "deployments", "", "d"), false},
		{res("deletecollection", "", "nodes", "", ""), false},
		{res("get", "", "pods", "log", "p"), false},
		{res("list", "rbac.authorization.k8s.io", "roles", "", ""), false},
	} {
		if got := node(c.a); got != c.want {
			t.Errorf("node rules on %s %s/%s: %v, want %v", c.a.Verb, c.a.Resource, c.a.Subresource, got, c.want)
		}
	}
}
