package authz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	rbacvalidation "k8s.io/component-helpers/auth/rbac/validation"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// RBAC authorization (rbac.authorization.k8s.io/v1), with upstream's semantics
// (plugin/pkg/auth/authorizer/rbac): a request is allowed when a rule of a role bound to
// the user allows it. ClusterRoleBindings grant everywhere, RoleBindings in their
// namespace. The four kinds are read from in-memory copies kept by watches (as
// upstream's informers), so a decision costs no etcd read.

var (
	rolesGVR               = rbacv1.SchemeGroupVersion.WithResource("roles")
	clusterRolesGVR        = rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	roleBindingsGVR        = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	clusterRoleBindingsGVR = rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings")
)

// Groups every authenticated user or service account is in, as upstream.
const (
	MastersGroup            = "system:masters"
	AuthenticatedGroup      = "system:authenticated"
	UnauthenticatedGroup    = "system:unauthenticated"
	ServiceAccountPrefix    = "system:serviceaccount:"
	AllServiceAccountsGroup = "system:serviceaccounts"
	// networkPolicyAgentsGroup: the NetworkPolicy enforcers' credentials (core/apiserver/netpolcred.go).
	NetworkPolicyAgentsGroup = "system:wasmkube:network-policy-agents"
)

// Attributes is one question for the authorizers: may user do verb on this resource (or
// non-resource path)? It is upstream's authorizer.Attributes, reduced to what is used.
type Attributes struct {
	User            admission.UserInfo
	Verb            string
	ResourceRequest bool
	Group           string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string // non-resource requests
	// fieldSelector of a list or watch (the node authorizer needs spec.nodeName).
	FieldSelector string
}

// gr names the resource (with its subresource) for messages.
func (a *Attributes) resName() string { return subName(a.Resource, a.Subresource) }

// rbacAuthorizer answers from the cached roles and bindings.
type rbacAuthorizer struct {
	roles, clusterRoles, roleBindings, clusterRBs *registry.Cache
}

func newRBACAuthorizer(ctx context.Context, stores map[schema.GroupVersionResource]*registry.Store, onClusterRoles func()) *rbacAuthorizer {
	mk := func(gvr schema.GroupVersionResource, changed func()) *registry.Cache {
		return registry.NewCache(ctx, stores[gvr], changed)
	}
	return &rbacAuthorizer{
		roles:        mk(rolesGVR, nil),
		clusterRoles: mk(clusterRolesGVR, onClusterRoles),
		roleBindings: mk(roleBindingsGVR, nil),
		clusterRBs:   mk(clusterRoleBindingsGVR, nil),
	}
}

// wait blocks until every cache has its first list (or ctx ends).
func (r *rbacAuthorizer) wait(ctx context.Context) error {
	for _, c := range []*registry.Cache{r.roles, r.clusterRoles, r.roleBindings, r.clusterRBs} {
		select {
		case <-c.Synced():
		case <-ctx.Done():
			return fmt.Errorf("RBAC caches not synced: %w", ctx.Err())
		}
	}
	return nil
}

func (r *rbacAuthorizer) clusterRole(name string) (*rbacv1.ClusterRole, bool) {
	o, ok := r.clusterRoles.Get("", name)
	if !ok {
		return nil, false
	}
	return o.(*rbacv1.ClusterRole), true
}

func (r *rbacAuthorizer) role(ns, name string) (*rbacv1.Role, bool) {
	o, ok := r.roles.Get(ns, name)
	if !ok {
		return nil, false
	}
	return o.(*rbacv1.Role), true
}

// roleRefRules are the rules of the role a binding in namespace ns refers to.
func (r *rbacAuthorizer) roleRefRules(ref rbacv1.RoleRef, ns string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "ClusterRole":
		cr, ok := r.clusterRole(ref.Name)
		if !ok {
			return nil, fmt.Errorf("clusterrole.rbac.authorization.k8s.io %q not found", ref.Name)
		}
		return cr.Rules, nil
	case "Role":
		role, ok := r.role(ns, ref.Name)
		if !ok {
			return nil, fmt.Errorf("role.rbac.authorization.k8s.io %q not found", ref.Name)
		}
		return role.Rules, nil
	}
	return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
}

// visitRules calls fn with every rule that applies to u in namespace ns ("" = cluster
// scope only), until fn returns false. Bindings to missing roles are skipped, as upstream.
func (r *rbacAuthorizer) visitRules(u admission.UserInfo, ns string, fn func(rule *rbacv1.PolicyRule) bool) {
	for _, o := range r.clusterRBs.Objects("") {
		crb := o.(*rbacv1.ClusterRoleBinding)
		if !bindingApplies(u, crb.Subjects, "") {
			continue
		}
		rules, err := r.roleRefRules(crb.RoleRef, "")
		if err != nil {
			continue
		}
		for i := range rules {
			if !fn(&rules[i]) {
				return
			}
		}
	}
	if ns == "" {
		return
	}
	for _, o := range r.roleBindings.Objects(ns) {
		rb := o.(*rbacv1.RoleBinding)
		if !bindingApplies(u, rb.Subjects, ns) {
			continue
		}
		rules, err := r.roleRefRules(rb.RoleRef, ns)
		if err != nil {
			continue
		}
		for i := range rules {
			if !fn(&rules[i]) {
				return
			}
		}
	}
}

// rulesFor lists every rule that applies to u in ns.
func (r *rbacAuthorizer) rulesFor(u admission.UserInfo, ns string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	r.visitRules(u, ns, func(rule *rbacv1.PolicyRule) bool {
		out = append(out, *rule)
		return true
	})
	return out
}

func (r *rbacAuthorizer) allows(a *Attributes) bool {
	allowed := false
	r.visitRules(a.User, a.Namespace, func(rule *rbacv1.PolicyRule) bool {
		allowed = ruleAllows(a, rule)
		return !allowed
	})
	return allowed
}

func bindingApplies(u admission.UserInfo, subjects []rbacv1.Subject, bindingNS string) bool {
	for i := range subjects {
		if subjectApplies(u, &subjects[i], bindingNS) {
			return true
		}
	}
	return false
}

// subjectApplies is upstream's appliesToUser: a ServiceAccount subject without a
// namespace means one in the binding's namespace.
func subjectApplies(u admission.UserInfo, s *rbacv1.Subject, bindingNS string) bool {
	switch s.Kind {
	case rbacv1.UserKind:
		return u.Name == s.Name
	case rbacv1.GroupKind:
		return u.InGroup(s.Name)
	case rbacv1.ServiceAccountKind:
		ns := bindingNS
		if s.Namespace != "" {
			ns = s.Namespace
		}
		return ns != "" && u.Name == ServiceAccountPrefix+ns+":"+s.Name
	}
	return false
}

// ruleAllows is upstream's RuleAllows.
func ruleAllows(a *Attributes, rule *rbacv1.PolicyRule) bool {
	if !hasOrAll(rule.Verbs, a.Verb, rbacv1.VerbAll) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule.NonResourceURLs, a.Path)
	}
	return hasOrAll(rule.APIGroups, a.Group, rbacv1.APIGroupAll) &&
		resourceMatches(rule.Resources, a.Resource, a.Subresource) &&
		(len(rule.ResourceNames) == 0 || has(rule.ResourceNames, a.Name))
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasOrAll(list []string, s, all string) bool {
	for _, x := range list {
		if x == s || x == all {
			return true
		}
	}
	return false
}

// resourceMatches: "*", the resource ("pods", "pods/log"), or "*/log" for a subresource.
func resourceMatches(ruleResources []string, resource, sub string) bool {
	combined := subName(resource, sub)
	for _, rr := range ruleResources {
		if rr == rbacv1.ResourceAll || rr == combined || sub != "" && rr == "*/"+sub {
			return true
		}
	}
	return false
}

// nonResourceURLMatches: "*", the path, or a prefix ending in "*".
func nonResourceURLMatches(urls []string, path string) bool {
	for _, u := range urls {
		if u == rbacv1.NonResourceAll || u == path || strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimSuffix(u, "*")) {
			return true
		}
	}
	return false
}

// ---- escalation prevention (upstream pkg/registry/rbac/*/policybased) ----

// Escalation is a validating admission plugin: a Role or ClusterRole may only be
// written by someone who holds every permission it grants (or has the escalate verb on
// it), and a binding only by someone who holds every permission of the role it binds (or
// has the bind verb on that role). system:masters may do both. Writes that change none of
// what grants permissions (a GC finalizer, an owner reference) are not checked.
type Escalation struct{ z *Authorizer }

func (p Escalation) Validate(ctx context.Context, a *admission.Attributes) error {
	if a.Resource.Group != rbacv1.GroupName || a.Subresource != "" || a.Object == nil {
		return nil
	}
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	u := a.User
	if u.InGroup(MastersGroup) {
		return nil
	}
	if err := p.z.rbac.wait(ctx); err != nil {
		return admission.Forbidden(a, err.Error())
	}
	ns := a.Namespace
	switch o := a.Object.(type) {
	case *rbacv1.Role:
		if old, ok := a.OldObject.(*rbacv1.Role); ok && equality.Semantic.DeepEqual(old.Rules, o.Rules) {
			return nil
		}
		return p.confirmRole(ctx, a, "roles", ns, o.Name, o.Rules, false)
	case *rbacv1.ClusterRole:
		if old, ok := a.OldObject.(*rbacv1.ClusterRole); ok && equality.Semantic.DeepEqual(old.Rules, o.Rules) &&
			equality.Semantic.DeepEqual(old.AggregationRule, o.AggregationRule) && equality.Semantic.DeepEqual(old.Labels, o.Labels) {
			return nil
		}
		// An aggregated role's rules are the controller's to write; what it grants is
		// decided by the selectors, which (since they can gather anything) need full
		// authority, as upstream.
		rules := o.Rules
		if o.AggregationRule != nil {
			rules = nil
		}
		if err := p.confirmRole(ctx, a, "clusterroles", "", o.Name, rules, o.AggregationRule != nil); err != nil {
			return err
		}
		// Labels can aggregate this role's rules into another (aggregate-to-admin ...): the
		// rules are already checked above, so that adds nothing the writer does not hold.
		return nil
	case *rbacv1.RoleBinding:
		if old, ok := a.OldObject.(*rbacv1.RoleBinding); ok && equality.Semantic.DeepEqual(old.Subjects, o.Subjects) && old.RoleRef == o.RoleRef {
			return nil
		}
		return p.confirmBinding(ctx, a, o.RoleRef, ns)
	case *rbacv1.ClusterRoleBinding:
		if old, ok := a.OldObject.(*rbacv1.ClusterRoleBinding); ok && equality.Semantic.DeepEqual(old.Subjects, o.Subjects) && old.RoleRef == o.RoleRef {
			return nil
		}
		return p.confirmBinding(ctx, a, o.RoleRef, "")
	}
	return nil
}

var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

func (p Escalation) confirmRole(ctx context.Context, a *admission.Attributes, resource, ns, name string, rules []rbacv1.PolicyRule, aggregated bool) error {
	esc := &Attributes{User: a.User, Verb: "escalate", ResourceRequest: true, Group: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: name}
	if ok, _ := p.z.Authorize(ctx, esc); ok {
		return nil
	}
	owned := p.z.rbac.rulesFor(a.User, ns)
	if ok, missing := rbacvalidation.Covers(owned, rules); !ok {
		return admission.Forbidden(a, escalationMessage(a.User, ns, missing))
	}
	if aggregated {
		if ok, _ := rbacvalidation.Covers(owned, fullAuthority); !ok {
			return admission.Forbidden(a, "must have cluster-admin privileges to use the aggregationRule")
		}
	}
	return nil
}

func (p Escalation) confirmBinding(ctx context.Context, a *admission.Attributes, ref rbacv1.RoleRef, ns string) error {
	resource := "clusterroles"
	if ref.Kind == "Role" {
		resource = "roles"
	}
	bind := &Attributes{User: a.User, Verb: "bind", ResourceRequest: true, Group: rbacv1.GroupName, Resource: resource, Namespace: ns, Name: ref.Name}
	if ok, _ := p.z.Authorize(ctx, bind); ok {
		return nil
	}
	rules, err := p.z.rbac.roleRefRules(ref, ns)
	if err != nil {
		return admission.Forbidden(a, err.Error())
	}
	if ok, missing := rbacvalidation.Covers(p.z.rbac.rulesFor(a.User, ns), rules); !ok {
		return admission.Forbidden(a, escalationMessage(a.User, ns, missing))
	}
	return nil
}

// escalationMessage is upstream's wording, with the rules that are not held.
func escalationMessage(u admission.UserInfo, ns string, missing []rbacv1.PolicyRule) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user %q (groups=%q) is attempting to grant RBAC permissions not currently held:", u.Name, u.Groups)
	const most = 20
	for i, r := range missing {
		if i == most {
			fmt.Fprintf(&b, "\n... and %d more", len(missing)-most)
			break
		}
		b.WriteString("\n" + compactRule(r))
	}
	if ns != "" {
		fmt.Fprintf(&b, "\n(in namespace %q)", ns)
	}
	return b.String()
}

func compactRule(r rbacv1.PolicyRule) string {
	var parts []string
	add := func(k string, v []string) {
		if len(v) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", k, v))
		}
	}
	add("APIGroups", r.APIGroups)
	add("Resources", r.Resources)
	add("ResourceNames", r.ResourceNames)
	add("NonResourceURLs", r.NonResourceURLs)
	add("Verbs", r.Verbs)
	return "{" + strings.Join(parts, ", ") + "}"
}

// ---- ClusterRole aggregation (upstream's clusterrole-aggregation controller) ----

// aggregator keeps the rules of every ClusterRole with an aggregationRule equal to the
// rules of the ClusterRoles its selectors match, in name order, without duplicates. It
// runs in the API server (every server of a cluster runs it; the writes are idempotent
// compare-and-swaps), so aggregation works whether or not a controller manager runs.
type aggregator struct {
	z            *Authorizer
	clusterRoles *registry.Store
	log          *slog.Logger
	kick         chan struct{}
}

func (g *aggregator) trigger() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func (g *aggregator) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
		}
		if err := g.z.rbac.wait(ctx); err != nil {
			return
		}
		if err := g.reconcile(ctx); err != nil && ctx.Err() == nil {
			g.log.Warn("clusterrole aggregation failed; retrying", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
				g.trigger()
			}
		}
	}
}

func (g *aggregator) reconcile(ctx context.Context) error {
	all := g.z.rbac.clusterRoles.Objects("")
	st := g.clusterRoles
	for _, o := range all {
		cr := o.(*rbacv1.ClusterRole)
		if cr.AggregationRule == nil {
			continue
		}
		want, err := aggregatedRules(cr, all)
		if err != nil {
			g.log.Warn("clusterrole aggregation: bad selector", "clusterrole", cr.Name, "err", err)
			continue
		}
		if equality.Semantic.DeepEqual(want, cr.Rules) || len(want) == 0 && len(cr.Rules) == 0 {
			continue
		}
		_, err = st.Storage.GuaranteedUpdate(ctx, st.Key("", cr.Name), nil, func(cur runtime.Object) (runtime.Object, error) {
			next := cur.DeepCopyObject().(*rbacv1.ClusterRole)
			next.Rules = want
			return st.TrackServerWrite(registry.ControllerManager, cur, next), nil
		})
		if err != nil {
			return fmt.Errorf("update clusterrole %s: %w", cr.Name, err)
		}
	}
	return nil
}

func aggregatedRules(cr *rbacv1.ClusterRole, all []runtime.Object) ([]rbacv1.PolicyRule, error) {
	var sels []labels.Selector
	for i := range cr.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&cr.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		sels = append(sels, sel)
	}
	var rules []rbacv1.PolicyRule
	for _, o := range all {
		other := o.(*rbacv1.ClusterRole)
		if other.Name == cr.Name {
			continue
		}
		matched := false
		for _, sel := range sels {
			if sel.Matches(labels.Set(other.Labels)) { // an empty selector matches all, as upstream
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		for _, r := range other.Rules {
			dup := false
			for _, have := range rules {
				if equality.Semantic.DeepEqual(have, r) {
					dup = true
					break
				}
			}
			if !dup {
				rules = append(rules, r)
			}
		}
	}
	return rules, nil
}
