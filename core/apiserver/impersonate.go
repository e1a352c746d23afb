package apiserver

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// startAuthorizers starts the caches the authorizers read (RBAC objects, the node graph),
// the ClusterRole aggregator, and reconciles the default roles and bindings.
func (s *Server) startAuthorizers(ctx, bg context.Context) error {
	if s.opts.TokenAuthFile != "" {
		m, err := loadTokenFile(s.opts.TokenAuthFile)
		if err != nil {
			return err
		}
		s.staticTokens = m
	}
	return s.authz.Start(ctx, bg, s.stores, s.log)
}

// ---- static tokens (upstream's --token-auth-file) ----

// loadTokenFile reads token,user,uid[,"group1,group2"] lines; blank lines and lines
// starting with # are skipped. Every user is also in system:authenticated.
func loadTokenFile(path string) (map[[32]byte]admission.UserInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.Comment = '#'
	r.TrimLeadingSpace = true
	m := map[[32]byte]admission.UserInfo{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("token auth file %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("token auth file %s, line %d: want token,user,uid[,groups], got %d fields", path, line, len(rec))
		}
		tok, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if tok == "" || name == "" {
			return nil, fmt.Errorf("token auth file %s, line %d: token and user must not be empty", path, line)
		}
		h := sha256.Sum256([]byte(tok))
		if _, dup := m[h]; dup {
			return nil, fmt.Errorf("token auth file %s, line %d: duplicate token", path, line)
		}
		u := admission.UserInfo{Name: name}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		if !u.InGroup(authz.AuthenticatedGroup) {
			u.Groups = append(u.Groups, authz.AuthenticatedGroup)
		}
		m[h] = u
	}
	return m, nil
}

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
