// Package authz decides whether a user may do a request, as upstream's
// --authorization-mode=Node,RBAC with system:masters first: the node authorizer (a
// kubelet reaches its own node, its pods and what they reference), RBAC over watch-fed
// caches of the roles and bindings, the default roles and bindings reconciled at start,
// the ClusterRole aggregation, and the admission check that refuses an RBAC write granting
// more than its writer holds. Who the user is (authentication) is the caller's.
package authz

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// Authorizer holds the authorizers: the node authorizer and RBAC. It exists before
// they start (admission's escalation check holds it from the start); until then it
// allows only system:masters.
type Authorizer struct {
	rbac *rbacAuthorizer
	node *nodeGraph
}

// authorizeTimeout bounds the wait for the authorizers' caches at start.
const authorizeTimeout = 30 * time.Second

// Start starts the caches the authorizers read (RBAC objects, the node graph) and the
// ClusterRole aggregator, after reconciling the default roles and bindings.
func (z *Authorizer) Start(ctx, bg context.Context, stores map[schema.GroupVersionResource]*registry.Store, log *slog.Logger) error {
	if err := bootstrapRBAC(ctx, stores[clusterRolesGVR], stores[clusterRoleBindingsGVR]); err != nil {
		return err
	}
	agg := &aggregator{z: z, clusterRoles: stores[clusterRolesGVR], log: log, kick: make(chan struct{}, 1)}
	z.rbac = newRBACAuthorizer(bg, stores, agg.trigger)
	z.node = newNodeGraph(bg, stores[corev1.SchemeGroupVersion.WithResource("pods")], stores[corev1.SchemeGroupVersion.WithResource("nodes")],
		stores[policyv1alpha1.SchemeGroupVersion.WithResource("wasmpolicies")])
	go agg.run(bg)
	agg.trigger()
	return nil
}

// Authorize is the authorizer chain, as upstream's --authorization-mode=Node,RBAC
// with system:masters first: the masters group may do everything; a node's request is
// decided by the node authorizer (nodeauth.go) when it allows it, else by RBAC like
// everyone else's (rbac.go). The reason is for the 403 message.
func (z *Authorizer) Authorize(ctx context.Context, a *Attributes) (bool, string) {
	if a.User.InGroup(MastersGroup) {
		return true, ""
	}
	ctx, cancel := context.WithTimeout(ctx, authorizeTimeout)
	defer cancel()
	var reason string
	if node := admission.NodeName(a.User); node != "" && z.node != nil {
		ok, why := z.node.authorize(ctx, node, a)
		if ok {
			return true, ""
		}
		reason = why
	}
	if z.rbac == nil {
		return false, reason
	}
	if err := z.rbac.wait(ctx); err != nil {
		return false, err.Error()
	}
	if z.rbac.allows(a) {
		return true, ""
	}
	return false, reason
}

// ForbiddenMessage is upstream's: User "u" cannot list resource "pods" in API group ""
// in the namespace "ns": reason.
func ForbiddenMessage(a *Attributes, reason string) string {
	var m string
	if !a.ResourceRequest {
		m = fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	} else {
		m = fmt.Sprintf("User %q cannot %s resource %q in API group %q", a.User.Name, a.Verb, a.resName(), a.Group)
		if a.Namespace != "" {
			m += fmt.Sprintf(" in the namespace %q", a.Namespace)
		} else {
			m += " at the cluster scope"
		}
	}
	if reason != "" {
		m += ": " + reason
	}
	return m
}

func subName(res, sub string) string {
	if sub == "" {
		return res
	}
	return res + "/" + sub
}

// Rules are the rules u has in namespace ns, for a SelfSubjectRulesReview: everything for
// system:masters, the node rules for a node (incomplete: the node authorizer's grants per
// object are not enumerable), and what RBAC grants.
func (z *Authorizer) Rules(ctx context.Context, u admission.UserInfo, ns string) (rules []rbacv1.PolicyRule, incomplete bool, err error) {
	if u.InGroup(MastersGroup) {
		rules = append(rules, fullAuthority...)
	}
	if admission.NodeName(u) != "" {
		rules = append(rules, nodeRules...)
		incomplete = true
	}
	if err := z.rbac.wait(ctx); err != nil {
		return nil, incomplete, err
	}
	return append(rules, z.rbac.rulesFor(u, ns)...), incomplete, nil
}

// Escalation is the admission plugin that refuses RBAC writes granting more than the
// writer holds (rbac.go), asking this authorizer.
func (z *Authorizer) Escalation() Escalation { return Escalation{z} }
