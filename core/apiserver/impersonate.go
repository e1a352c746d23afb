package apiserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authn"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// startAuthorizers starts the caches the authorizers read (RBAC objects, the node graph),
// the ClusterRole aggregator, and reconciles the default roles and bindings.
func (s *Server) startAuthorizers(ctx, bg context.Context) error {
	if s.opts.TokenAuthFile != "" {
		m, err := authn.LoadTokenFile(s.opts.TokenAuthFile)
		if err != nil {
			return err
		}
		s.staticTokens = m
	}
	return s.authz.Start(ctx, bg, s.stores, s.log)
}

// ---- static tokens (upstream's --token-auth-file) ----

func (s *Server) authenticateStatic(token string) (admission.UserInfo, bool) {
	if token == "" || s.staticTokens == nil {
		return admission.UserInfo{}, false
	}
	u, ok := s.staticTokens[sha256.Sum256([]byte(token))]
	return u, ok
}

// ---- impersonation (kubectl --as, --as-group; upstream's WithImpersonation) ----

const (
	impersonateUserHeader  = "Impersonate-User"
	impersonateGroupHeader = "Impersonate-Group"
	impersonateUIDHeader   = "Impersonate-Uid"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

// impersonate returns the user the request acts as: the authenticated one, or the one
// its Impersonate-* headers name when the authenticated user may impersonate each part
// (verb impersonate on users, groups, serviceaccounts, uids and userextras/<key>).
func (s *Server) impersonate(ctx context.Context, r *http.Request, u admission.UserInfo) (admission.UserInfo, error) {
	h := r.Header
	name := h.Get(impersonateUserHeader)
	groups := h.Values(impersonateGroupHeader)
	uid := h.Get(impersonateUIDHeader)
	var extras []string
	for k := range h {
		if strings.HasPrefix(k, impersonateExtraPrefix) {
			extras = append(extras, k)
		}
	}
	if name == "" {
		if len(groups) > 0 || uid != "" || len(extras) > 0 {
			return u, apierrors.NewBadRequest("impersonation headers Impersonate-Group, Impersonate-Uid or Impersonate-Extra-* require Impersonate-User")
		}
		return u, nil
	}
	check := func(a *authz.Attributes) error {
		a.User, a.Verb, a.ResourceRequest = u, "impersonate", true
		if ok, why := s.authorizeAttrs(ctx, a); !ok {
			return apierrors.NewForbidden(schema.GroupResource{Group: a.Group, Resource: a.Resource}, a.Name, errors.New(authz.ForbiddenMessage(a, why)))
		}
		return nil
	}
	out := admission.UserInfo{Name: name}
	if ns, sa, ok := splitServiceAccount(name); ok {
		if err := check(&authz.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: sa}); err != nil {
			return u, err
		}
		if len(groups) == 0 {
			out.Groups = []string{authz.AllServiceAccountsGroup, authz.AllServiceAccountsGroup + ":" + ns}
		}
	} else if err := check(&authz.Attributes{Resource: "users", Name: name}); err != nil {
		return u, err
	}
	for _, g := range groups {
		if err := check(&authz.Attributes{Resource: "groups", Name: g}); err != nil {
			return u, err
		}
		out.Groups = append(out.Groups, g)
	}
	if uid != "" {
		if err := check(&authz.Attributes{Group: "authentication.k8s.io", Resource: "uids", Name: uid}); err != nil {
			return u, err
		}
	}
	for _, k := range extras {
		key := strings.ToLower(strings.TrimPrefix(k, impersonateExtraPrefix))
		for _, v := range h.Values(k) {
			if err := check(&authz.Attributes{Group: "authentication.k8s.io", Resource: "userextras", Subresource: key, Name: v}); err != nil {
				return u, err
			}
		}
	}
	// As upstream: the impersonated user is authenticated unless the groups say otherwise.
	if !out.InGroup(authz.AuthenticatedGroup) && !out.InGroup(authz.UnauthenticatedGroup) {
		out.Groups = append(out.Groups, authz.AuthenticatedGroup)
	}
	return out, nil
}

// splitServiceAccount splits system:serviceaccount:NS:NAME.
func splitServiceAccount(user string) (ns, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, authz.ServiceAccountPrefix)
	if !ok {
		return "", "", false
	}
	ns, name, ok = strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return ns, name, true
}
