package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// Well-known identities.
const (
	adminUser      = "wasmkube-admin"
	loopbackUser   = "system:apiserver"
	mastersGroup   = "system:masters"
	authedGroup    = "system:authenticated"
	tokensFileName = "tokens.json"
	joinTokenFile  = "join-token"
)

func bearerToken(h string) string {
	const p = "Bearer "
	if len(h) > len(p) && strings.EqualFold(h[:len(p)], p) {
		return strings.TrimSpace(h[len(p):])
	}
	return ""
}

// attrsOf is the authorization question of a parsed request. A list or watch whose field
// selector names one object (metadata.name=x) is asked about that object, as upstream's
// RequestInfoFactory does, so resourceNames rules and the node authorizer apply to it.
func attrsOf(u admission.UserInfo, ri *handlers.RequestInfo, fieldSelector string) *authzAttrs {
	a := &authzAttrs{user: u, verb: ri.Verb, resourceRequest: ri.ResourceRequest, namespace: ri.Namespace, name: ri.Name,
		subresource: ri.Subresource, fieldSelector: fieldSelector}
	if ri.Resource != nil {
		a.group, a.resource = ri.Resource.GVR.Group, ri.Resource.GVR.Resource
	}
	// As upstream's RequestInfoFactory: a request for one namespace (/api/v1/namespaces/a,
	// and its subresources) is in that namespace, so a RoleBinding in namespace a that
	// grants get on namespaces lets its subjects read namespace a.
	if a.resourceRequest && a.group == "" && a.resource == "namespaces" && a.namespace == "" && a.name != "" {
		a.namespace = a.name
	}
	if a.name == "" && (a.verb == "list" || a.verb == "watch") && fieldSelector != "" {
		if sel, err := fields.ParseSelector(fieldSelector); err == nil {
			if n, ok := sel.RequiresExactMatch("metadata.name"); ok {
				a.name = n
			}
		}
	}
	return a
}

// authorizeTimeout bounds the wait for the authorizers' caches at start.
const authorizeTimeout = 30 * time.Second

// authorizeAttrs is the authorizer chain, as upstream's --authorization-mode=Node,RBAC
// with system:masters first: the masters group may do everything; a node's request is
// decided by the node authorizer (nodeauth.go) when it allows it, else by RBAC like
// everyone else's (rbac.go). The reason is for the 403 message.
func (s *Server) authorizeAttrs(ctx context.Context, a *authzAttrs) (bool, string) {
	if a.user.InGroup(mastersGroup) {
		return true, ""
	}
	ctx, cancel := context.WithTimeout(ctx, authorizeTimeout)
	defer cancel()
	var reason string
	if node := admission.NodeName(a.user); node != "" && s.nodeAuthz != nil {
		ok, why := s.nodeAuthz.authorize(ctx, node, a)
		if ok {
			return true, ""
		}
		reason = why
	}
	if s.rbac == nil {
		return false, reason
	}
	if err := s.rbac.wait(ctx); err != nil {
		return false, err.Error()
	}
	if s.rbac.allows(a) {
		return true, ""
	}
	return false, reason
}

// forbiddenMessage is upstream's: User "u" cannot list resource "pods" in API group ""
// in the namespace "ns": reason.
func forbiddenMessage(a *authzAttrs, reason string) string {
	var m string
	if !a.resourceRequest {
		m = fmt.Sprintf("User %q cannot %s path %q", a.user.Name, a.verb, a.path)
	} else {
		m = fmt.Sprintf("User %q cannot %s resource %q in API group %q", a.user.Name, a.verb, a.resName(), a.group)
		if a.namespace != "" {
			m += fmt.Sprintf(" in the namespace %q", a.namespace)
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

// isNonResourcePath: the paths served besides resources (metrics, OpenAPI, discovery),
// authorized as non-resource requests (verb = the lowercase HTTP method).
func isNonResourcePath(path string) bool {
	return path == "/metrics" || path == "/openapi/v2" || path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/") ||
		path == "/api" || path == "/apis" || path == "/api/v1" || strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3
}
