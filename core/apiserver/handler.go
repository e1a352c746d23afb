package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/internal/profiling"
)

// statusWriter records the response code for metrics and logs; it keeps Flush working
// for watch and log streams.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// defaultRequestTimeout bounds every request but watches and log streams.
const defaultRequestTimeout = 60 * time.Second

var errNotFoundPath = apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "the server could not find the requested resource", 0, false)

// ServeHTTP is the whole API: health and version (anonymous), join (join secret), and
// everything else behind a bearer token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w, r, guarded := s.guardRequest(w, r) // body and write deadlines; errors do not wait for a body (httpguard.go)
	defer guarded()
	sw := &statusWriter{ResponseWriter: w}
	userName := ""
	ml := requestLabels{verb: strings.ToUpper(r.Method)}
	defer func() {
		code := sw.code
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.observe(ml, code, time.Since(start))
		if s.log.Enabled(r.Context(), slog.LevelDebug) {
			s.log.Debug("request", "verb", ml.verb, "uri", r.URL.RequestURI(), "user", userName, "code", code, "latency", time.Since(start))
		}
	}()

	path := strings.TrimSuffix(r.URL.Path, "/")
	if isHealthPath(path) {
		s.serveHealth(sw, r, path)
		return
	}
	switch path {
	case "/version":
		handlers.WriteJSON(sw, http.StatusOK, versionInfo(), handlers.OutJSON)
		return
	case joinPath:
		s.serveJoin(sw, r)
		return
	case renewPath:
		s.serveRenew(sw, r)
		return
	case revokePath:
		s.serveRevoke(sw, r)
		return
	}
	user, ok := s.authenticateStatic(bearerToken(r.Header.Get("Authorization")))
	if !ok {
		user, ok = s.authenticateLimited(sw, r)
	}
	userName = user.Name
	if !ok {
		return
	}
	// kubectl --as/--as-group (impersonate.go), then the authorizers (auth.go) decide.
	user, ierr := s.impersonate(r.Context(), r, user)
	if ierr != nil {
		handlers.WriteError(sw, ierr)
		return
	}
	userName = user.Name
	if isExplorerPage(r.URL.Path) {
		s.serveExplorerPage(sw, r, user) // explorerpage.go
		return
	}
	if isNonResourcePath(path) {
		a := &authz.Attributes{User: user, Verb: strings.ToLower(r.Method), Path: r.URL.Path}
		if ok, why := s.authorizeAttrs(r.Context(), a); !ok {
			handlers.WriteError(sw, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(authz.ForbiddenMessage(a, why))))
			return
		}
	}
	switch {
	case path == "/metrics":
		s.metricsHandler.ServeHTTP(sw, r)
		return
	case (path == "/debug/pprof" || strings.HasPrefix(path, "/debug/pprof/")) && !s.opts.DisableProfiling:
		profiling.Handler().ServeHTTP(sw, r) // authorized above, as a nonResourceURL
		return
	case strings.HasPrefix(path, explorerv1.PathPrefix+"/"):
		s.serveExplorer(sw, r, user) // explorer.go: authorized per record, as reading its object
		return
	case path == "/openapi/v2" || path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/"):
		if s.openapi == nil {
			handlers.WriteError(sw, errNotFoundPath)
			return
		}
		s.serveOpenAPI(sw, r) // the static documents and the custom resources' (customresources.go)
		return
	case path == "/api" || path == "/apis" || strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3 || path == "/api/v1":
		if s.serveDiscovery(sw, r, path) {
			return
		}
	}
	info, err := s.parsePath(r.Method, path, r.URL.Query())
	if err != nil {
		handlers.WriteError(sw, err)
		return
	}
	ml = labelsFor(metricVerb(info.Verb), info, r.URL.Query()["dryRun"])
	if a := attrsOf(user, info, r.URL.Query().Get("fieldSelector")); true {
		if ok, why := s.authorizeAttrs(r.Context(), a); !ok {
			handlers.WriteError(sw, apierrors.NewForbidden(info.Resource.GVR.GroupResource(), info.Name, errors.New(authz.ForbiddenMessage(a, why))))
			return
		}
	}
	rq := &handlers.Request{W: sw, Req: r, Info: info, User: user, Query: r.URL.Query()}
	if err := s.serveResource(rq); err != nil {
		handlers.WriteError(sw, err)
	}
}

func metricVerb(v string) string {
	switch v {
	case "create":
		return "POST"
	case "update":
		return "PUT"
	}
	return strings.ToUpper(v)
}

// parsePath splits /api/v1/namespaces/ns/pods/name/sub (and /apis/g/v/...) into a
// requestInfo and the verb.
func (s *Server) parsePath(method, path string, q url.Values) (*handlers.RequestInfo, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var gv schema.GroupVersion
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, errNotFoundPath
	}
	watchPath := false
	if rest[0] == "watch" {
		watchPath, rest = true, rest[1:]
	}
	ri := &handlers.RequestInfo{ResourceRequest: true}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		if r, ok := s.lookup(gv.WithResource(rest[2])); ok && r.Namespaced {
			ri.Namespace, rest = rest[1], rest[2:]
		}
	}
	if len(rest) > 3 && rest[2] == "proxy" && !watchPath {
		rest = rest[:3] // nodes/NAME/proxy/<path to the kubelet> (nodeproxy.go)
	}
	if len(rest) == 0 || len(rest) > 3 {
		return nil, errNotFoundPath
	}
	res, ok := s.lookup(gv.WithResource(rest[0])) // static, then custom resources (customresources.go)
	if !ok {
		return nil, errNotFoundPath
	}
	ri.Resource = res
	if len(rest) > 1 {
		ri.Name = rest[1]
	}
	if len(rest) > 2 {
		ri.Subresource = rest[2]
		if !res.HasSub(ri.Subresource) {
			return nil, errNotFoundPath
		}
	}
	if res.Namespaced && ri.Namespace == "" && (ri.Name != "" || method == http.MethodPost) {
		return nil, errNotFoundPath
	}
	watching := watchPath || q.Get("watch") == "true" || q.Get("watch") == "1"
	switch method {
	case http.MethodGet:
		switch {
		case ri.Name == "" && watching:
			ri.Verb = "watch"
		case ri.Name == "":
			ri.Verb = "list"
		default:
			ri.Verb = "get"
		}
	case http.MethodPost:
		switch {
		case ri.Name == "":
			ri.Verb = "create"
		case ri.Subresource == "binding" || ri.Subresource == "eviction" || ri.Subresource == "token":
			ri.Verb = "create"
		}
	case http.MethodPut:
		if ri.Name != "" && !res.CreateOnly {
			ri.Verb = "update"
		}
	case http.MethodPatch:
		if ri.Name != "" && !res.CreateOnly {
			ri.Verb = "patch"
		}
	case http.MethodDelete:
		if !res.CreateOnly && ri.Subresource == "" {
			ri.Verb = "delete"
			if ri.Name == "" {
				ri.Verb = "deletecollection"
			}
		}
	}
	if ri.Subresource == "proxy" && ri.Name != "" {
		// A proxy is authorized with the verb of its method (upstream's RequestInfo).
		ri.Verb = proxyVerbs[method]
	}
	if streamSubresources[ri.Subresource] && ri.Name != "" && (method == http.MethodGet || method == http.MethodPost) {
		ri.Verb = "create" // exec, attach, portforward: a connect, authorized as create (streaming.go)
	}
	if ri.Verb == "" || res.CreateOnly && ri.Verb != "create" || res.ReadOnly && ri.Verb != "get" && ri.Verb != "list" || ri.Verb == "deletecollection" && res.NoDeleteCollection {
		return nil, apierrors.NewMethodNotSupported(res.GVR.GroupResource(), strings.ToLower(method))
	}
	return ri, nil
}

// serveResource runs one resource request.
func (s *Server) serveResource(rq *handlers.Request) error {
	if err := handlers.ValidateQuery(rq.Info.Verb, rq.Query); err != nil {
		return err
	}
	if streamSubresources[rq.Info.Subresource] {
		return s.serveStream(rq, s.storeOf(rq.Info.Resource))
	}
	if rq.Info.Subresource == "proxy" {
		return s.serveProxy(rq, s.storeOf(rq.Info.Resource)) // podproxy.go, nodeproxy.go
	}
	if err := handlers.ParseOptions(rq); err != nil {
		return err
	}
	ctx, cancel, err := requestContext(rq)
	if err != nil {
		return err
	}
	defer cancel()
	st := s.storeOf(rq.Info.Resource)
	if served, err := s.serveSpecial(ctx, rq, st); served {
		return err
	}
	if rq.Info.Resource.GVR == crdGVR && rq.Info.Verb != "get" && rq.Info.Verb != "list" && rq.Info.Verb != "watch" && !rq.DryRun {
		rq.W = &refreshFirst{ResponseWriter: rq.W, refresh: func() { s.crdWritten(ctx) }} // serve the new kinds before answering (customresources.go)
	}
	return s.serveVerb(ctx, rq, st)
}

// requestContext bounds requests other than watches and log streams, as upstream: 60s,
// or the client's ?timeout= (kubectl --request-timeout) if shorter.
func requestContext(rq *handlers.Request) (context.Context, context.CancelFunc, error) {
	ctx := rq.Req.Context()
	if rq.Info.Verb == "watch" || rq.Info.Subresource == "log" {
		return ctx, func() {}, nil
	}
	limit := defaultRequestTimeout
	if v := rq.Query.Get("timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout %q: must be a positive duration such as 30s", v))
		}
		limit = min(limit, d)
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	return ctx, cancel, nil
}

// serveSpecial serves the subresources and resources that are not a verb on a stored
// object (binding, eviction, log, scale, token; metrics; the reviews); served is false
// for the rest.
func (s *Server) serveSpecial(ctx context.Context, rq *handlers.Request, st *registry.Store) (served bool, _ error) {
	info := rq.Info
	switch info.Subresource {
	case "binding":
		return true, s.serveBinding(ctx, rq, st)
	case "eviction":
		return true, s.serveEviction(ctx, rq, st)
	case "log":
		return true, s.servePodLog(ctx, rq, st)
	case "scale":
		if st.Resource.Custom != nil {
			return true, s.serveCustomScale(ctx, rq, st)
		}
		return true, s.serveScale(ctx, rq, st)
	case "token":
		return true, s.serveTokenRequest(ctx, rq, st)
	}
	if info.Resource.ReadOnly && info.Resource.GVR.Group == MetricsGroup {
		return true, s.serveMetrics(ctx, rq)
	}
	switch info.Resource.GVR.Resource {
	case "tokenreviews":
		return true, s.serveTokenReview(rq)
	case "selfsubjectreviews":
		return true, s.serveSelfSubjectReview(rq)
	case "selfsubjectaccessreviews":
		return true, s.serveSelfSubjectAccessReview(rq)
	case "selfsubjectrulesreviews":
		return true, s.serveSelfSubjectRulesReview(rq)
	case "subjectaccessreviews":
		return true, s.serveSubjectAccessReview(rq)
	case "localsubjectaccessreviews":
		return true, s.serveLocalSubjectAccessReview(rq)
	}
	return false, nil
}

// serveVerb runs the verb's handler on the resource's store.
func (s *Server) serveVerb(ctx context.Context, rq *handlers.Request, st *registry.Store) error {
	switch rq.Info.Verb {
	case "get":
		return handlers.Get(ctx, rq, st)
	case "list":
		return handlers.List(ctx, rq, st)
	case "watch":
		return handlers.Watch(ctx, rq, st, s.stoppedCh())
	case "create":
		return handlers.Create(ctx, rq, st, s.created)
	case "update":
		return handlers.Update(ctx, rq, st)
	case "patch":
		return handlers.Patch(ctx, rq, st)
	case "delete":
		return handlers.Delete(ctx, rq, st)
	case "deletecollection":
		return handlers.DeleteCollection(ctx, rq, st)
	}
	return apierrors.NewMethodNotSupported(rq.Info.Resource.GVR.GroupResource(), rq.Info.Verb)
}

// created runs after a create through the API (not a dry run) and before its answer: a new
// namespace gets its default service account at once, as upstream's controller would.
func (s *Server) created(ctx context.Context, st *registry.Store, out runtime.Object) {
	if st.Resource.Kind == "Namespace" {
		if err := s.seedServiceAccounts(ctx, registry.ObjMeta(out).GetName()); err != nil {
			s.log.Warn("default service account of a new namespace (the controller manager retries)", "err", err)
		}
	}
}
