package apiserver

import (
	"context"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// joinTokenFile holds the join token in the data dir.
const joinTokenFile = "join-token"

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
func attrsOf(u admission.UserInfo, ri *handlers.RequestInfo, fieldSelector string) *authz.Attributes {
	a := &authz.Attributes{User: u, Verb: ri.Verb, ResourceRequest: ri.ResourceRequest, Namespace: ri.Namespace, Name: ri.Name,
		Subresource: ri.Subresource, FieldSelector: fieldSelector}
	if ri.Resource != nil {
		a.Group, a.Resource = ri.Resource.GVR.Group, ri.Resource.GVR.Resource
	}
	// As upstream's RequestInfoFactory: a request for one namespace (/api/v1/namespaces/a,
	// and its subresources) is in that namespace, so a RoleBinding in namespace a that
	// grants get on namespaces lets its subjects read namespace a.
	if a.ResourceRequest && a.Group == "" && a.Resource == "namespaces" && a.Namespace == "" && a.Name != "" {
		a.Namespace = a.Name
	}
	if a.Name == "" && (a.Verb == "list" || a.Verb == "watch") && fieldSelector != "" {
		if sel, err := fields.ParseSelector(fieldSelector); err == nil {
			if n, ok := sel.RequiresExactMatch("metadata.name"); ok {
				a.Name = n
			}
		}
	}
	return a
}

// authorizeAttrs asks the server's authorizer chain (authorizer.go).
func (s *Server) authorizeAttrs(ctx context.Context, a *authz.Attributes) (bool, string) {
	return s.authz.Authorize(ctx, a)
}

// isNonResourcePath: the paths served besides resources (metrics, OpenAPI, discovery),
// authorized as non-resource requests (verb = the lowercase HTTP method).
func isNonResourcePath(path string) bool {
	return path == "/metrics" || path == "/debug/pprof" || strings.HasPrefix(path, "/debug/pprof/") || path == "/openapi/v2" || path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/") ||
		path == "/api" || path == "/apis" || path == "/api/v1" || strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3
}
