package apiserver

import (
	"errors"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/explorer/web"
)

// explorerPage serves the decision explorer's page (core/explorer/web, docs/explorer.md).
var explorerPage = web.Handler()

// isExplorerPage: /explorer and everything under /explorer/ (the raw path: a trailing
// slash matters to the page's relative URLs).
func isExplorerPage(rawPath string) bool {
	return rawPath == "/explorer" || strings.HasPrefix(rawPath, web.Prefix)
}

// serveExplorerPage serves the page to an authenticated user whom the authorizers allow
// "get" on the non-resource URL (the default role system:discovery grants /explorer and
// /explorer/* to every authenticated user, as it does discovery). The page carries no
// records: it reads them through explorer.wasmkube.io with the same credential, which
// is authorized record by record.
func (s *Server) serveExplorerPage(w http.ResponseWriter, r *http.Request, user admission.UserInfo) {
	a := &authz.Attributes{User: user, Verb: "get", Path: r.URL.Path}
	if ok, why := s.authorizeAttrs(r.Context(), a); !ok {
		handlers.WriteError(w, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(authz.ForbiddenMessage(a, why))))
		return
	}
	explorerPage.ServeHTTP(w, r)
}
