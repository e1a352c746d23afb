package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// request is one API call being served.
type request struct {
	w        http.ResponseWriter
	r        *http.Request
	info     *requestInfo
	user     admission.UserInfo
	query    url.Values
	format   outputFormat
	dryRun   bool
	fv       fieldValidation
	warnings []string
}

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
		writeJSON(sw, http.StatusOK, versionInfo(), outJSON)
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
		writeError(sw, ierr)
		return
	}
	userName = user.Name
	if isNonResourcePath(path) {
		a := &authzAttrs{user: user, verb: strings.ToLower(r.Method), path: r.URL.Path}
		if ok, why := s.authorizeAttrs(r.Context(), a); !ok {
			writeError(sw, apierrors.NewForbidden(schema.GroupResource{}, "", errors.New(forbiddenMessage(a, why))))
			return
		}
	}
	switch {
	case path == "/metrics":
		s.metricsHandler.ServeHTTP(sw, r)
		return
	case path == "/openapi/v2" || path == "/openapi/v3" || strings.HasPrefix(path, "/openapi/v3/"):
		if s.openapi == nil {
			writeError(sw, errNotFoundPath)
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
		writeError(sw, err)
		return
	}
	ml = labelsFor(metricVerb(info.verb), info, r.URL.Query()["dryRun"])
	if a := attrsOf(user, info, r.URL.Query().Get("fieldSelector")); true {
		if ok, why := s.authorizeAttrs(r.Context(), a); !ok {
			writeError(sw, apierrors.NewForbidden(info.res.GVR.GroupResource(), info.name, errors.New(forbiddenMessage(a, why))))
			return
		}
	}
	rq := &request{w: sw, r: r, info: info, user: user, query: r.URL.Query()}
	if err := s.serveResource(rq); err != nil {
		writeError(sw, err)
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
func (s *Server) parsePath(method, path string, q url.Values) (*requestInfo, error) {
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
	ri := &requestInfo{resourceRequest: true}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		if r, ok := s.lookup(gv.WithResource(rest[2])); ok && r.Namespaced {
			ri.namespace, rest = rest[1], rest[2:]
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
	ri.res = res
	if len(rest) > 1 {
		ri.name = rest[1]
	}
	if len(rest) > 2 {
		ri.subresource = rest[2]
		if !res.HasSub(ri.subresource) {
			return nil, errNotFoundPath
		}
	}
	if res.Namespaced && ri.namespace == "" && (ri.name != "" || method == http.MethodPost) {
		return nil, errNotFoundPath
	}
	watching := watchPath || q.Get("watch") == "true" || q.Get("watch") == "1"
	switch method {
	case http.MethodGet:
		switch {
		case ri.name == "" && watching:
			ri.verb = "watch"
		case ri.name == "":
			ri.verb = "list"
		default:
			ri.verb = "get"
		}
	case http.MethodPost:
		switch {
		case ri.name == "":
			ri.verb = "create"
		case ri.subresource == "binding" || ri.subresource == "eviction" || ri.subresource == "token":
			ri.verb = "create"
		}
	case http.MethodPut:
		if ri.name != "" && !res.CreateOnly {
			ri.verb = "update"
		}
	case http.MethodPatch:
		if ri.name != "" && !res.CreateOnly {
			ri.verb = "patch"
		}
	case http.MethodDelete:
		if !res.CreateOnly && ri.subresource == "" {
			ri.verb = "delete"
			if ri.name == "" {
				ri.verb = "deletecollection"
			}
		}
	}
	if ri.subresource == "proxy" && ri.name != "" {
		// A proxy is authorized with the verb of its method (upstream's RequestInfo).
		ri.verb = proxyVerbs[method]
	}
	if streamSubresources[ri.subresource] && ri.name != "" && (method == http.MethodGet || method == http.MethodPost) {
		ri.verb = "create" // exec, attach, portforward: a connect, authorized as create (streaming.go)
	}
	if ri.verb == "" || res.CreateOnly && ri.verb != "create" || res.ReadOnly && ri.verb != "get" && ri.verb != "list" || ri.verb == "deletecollection" && res.NoDeleteCollection {
		return nil, apierrors.NewMethodNotSupported(res.GVR.GroupResource(), strings.ToLower(method))
	}
	return ri, nil
}

// serveResource runs one resource request.
func (s *Server) serveResource(rq *request) error {
	if err := validateQuery(rq.info.verb, rq.query); err != nil {
		return err
	}
	if streamSubresources[rq.info.subresource] {
		return s.serveStream(rq, s.storeOf(rq.info.res))
	}
	if rq.info.subresource == "proxy" {
		return s.serveProxy(rq, s.storeOf(rq.info.res)) // podproxy.go, nodeproxy.go
	}
	var err error
	if rq.format, err = negotiate(rq.r.Header.Get("Accept")); err != nil {
		return err
	}
	if rq.fv, err = parseFieldValidation(rq.query.Get("fieldValidation")); err != nil {
		return err
	}
	for _, d := range rq.query["dryRun"] {
		if d != "All" {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid dryRun %q: only All is supported", d))
		}
		rq.dryRun = true
	}
	if rv := rq.query.Get("resourceVersion"); rv != "" {
		if _, err := strconv.ParseUint(rv, 10, 64); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid resourceVersion %q: must be a non-negative integer", rv))
		}
	}
	info := rq.info
	st := s.storeOf(info.res)
	ctx := rq.r.Context()
	// Requests other than watches and log streams are bounded, as upstream: 60s, or the
	// client's ?timeout= (kubectl --request-timeout) if shorter.
	if info.verb != "watch" && info.subresource != "log" {
		limit := defaultRequestTimeout
		if v := rq.query.Get("timeout"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid timeout %q: must be a positive duration such as 30s", v))
			}
			limit = min(limit, d)
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}

	switch info.subresource {
	case "binding":
		return s.serveBinding(ctx, rq, st)
	case "eviction":
		return s.serveEviction(ctx, rq, st)
	case "log":
		return s.servePodLog(ctx, rq, st)
	case "scale":
		if st.Resource.Custom != nil {
			return s.serveCustomScale(ctx, rq, st)
		}
		return s.serveScale(ctx, rq, st)
	case "token":
		return s.serveTokenRequest(ctx, rq, st)
	}
	if info.res.ReadOnly && info.res.GVR.Group == MetricsGroup {
		return s.serveMetrics(ctx, rq)
	}
	switch info.res.GVR.Resource {
	case "tokenreviews":
		return s.serveTokenReview(rq)
	case "selfsubjectreviews":
		return s.serveSelfSubjectReview(rq)
	case "selfsubjectaccessreviews":
		return s.serveSelfSubjectAccessReview(rq)
	case "selfsubjectrulesreviews":
		return s.serveSelfSubjectRulesReview(rq)
	case "subjectaccessreviews":
		return s.serveSubjectAccessReview(rq)
	case "localsubjectaccessreviews":
		return s.serveLocalSubjectAccessReview(rq)
	}

	if info.res.GVR == crdGVR && info.verb != "get" && info.verb != "list" && info.verb != "watch" && !rq.dryRun {
		rq.w = &refreshFirst{ResponseWriter: rq.w, refresh: func() { s.crdWritten(ctx) }} // serve the new kinds before answering (customresources.go)
	}
	switch info.verb {
	case "get":
		obj, err := st.Get(ctx, st.Key(info.namespace, info.name), rq.query.Get("resourceVersion"))
		if err != nil {
			return st.APIError(err, info.name)
		}
		return s.respond(rq, http.StatusOK, obj)
	case "list":
		return s.serveList(ctx, rq, st)
	case "watch":
		return s.serveWatch(ctx, rq, st)
	case "create":
		obj, err := s.decodeRequest(rq, st.Resource)
		if err != nil {
			return err
		}
		out, err := st.Create(ctx, rq.write(), obj)
		if err != nil {
			return err
		}
		if st.Resource.Kind == "Namespace" && !rq.dryRun {
			if err := s.seedServiceAccounts(ctx, registry.ObjMeta(out).GetName()); err != nil {
				s.log.Warn("default service account of a new namespace (the controller manager retries)", "err", err)
			}
		}
		if st.Resource.Custom != nil && info.subresource == "" {
			return s.respondWritten(rq, st, http.StatusCreated, out) // customlist.go
		}
		return s.respond(rq, http.StatusCreated, out)
	case "update":
		in, err := s.decodeRequest(rq, st.Resource)
		if err != nil {
			return err
		}
		var pre *storage.Preconditions
		if rv := registry.ObjMeta(in).GetResourceVersion(); rv != "" {
			pre = &storage.Preconditions{ResourceVersion: &rv}
		}
		out, err := st.Update(ctx, rq.write(), info.name, pre, func(runtime.Object) (runtime.Object, error) { return in.DeepCopyObject(), nil })
		if err != nil {
			return err
		}
		return s.respond(rq, http.StatusOK, out)
	case "patch":
		apply, err := s.patcher(rq, st.Resource)
		if err != nil {
			return err
		}
		out, err := st.Update(ctx, rq.write(), info.name, nil, func(cur runtime.Object) (runtime.Object, error) {
			return apply(cur)
		})
		if err != nil {
			return err
		}
		return s.respond(rq, http.StatusOK, out)
	case "delete":
		opts, err := s.deleteOptions(rq)
		if err != nil {
			return err
		}
		obj, deleted, err := st.Delete(ctx, rq.write(), info.name, opts)
		if err != nil {
			return err
		}
		code := http.StatusOK
		if !deleted {
			code = http.StatusAccepted
		}
		if st.Resource.GVR.Resource == "pods" || !deleted {
			return s.respond(rq, code, obj)
		}
		m := registry.ObjMeta(obj)
		writeJSON(rq.w, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
			Details: &metav1.StatusDetails{Name: m.GetName(), Group: st.Resource.GVR.Group, Kind: st.Resource.GVR.Resource, UID: m.GetUID()}}, outJSON)
		return nil
	case "deletecollection":
		return s.serveDeleteCollection(ctx, rq, st)
	}
	return apierrors.NewMethodNotSupported(info.res.GVR.GroupResource(), info.verb)
}

// decodeRequest reads and decodes the body as an object of res.
func (s *Server) decodeRequest(rq *request, res *registry.Resource) (runtime.Object, error) {
	obj := res.NewFunc()
	if err := decodeBody(rq, res, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// write is what the store needs of rq for a create, update or delete.
func (rq *request) write() *registry.WriteRequest {
	return &registry.WriteRequest{Namespace: rq.info.namespace, Subresource: rq.info.subresource, User: rq.user, DryRun: rq.dryRun, Warn: rq.addWarnings}
}

func (rq *request) addWarnings(ws []string) {
	for _, w := range ws {
		rq.w.Header().Add("Warning", `299 - `+strconv.Quote(w))
	}
}

// deleteOptions merges the DeleteOptions body with the query parameters.
func (s *Server) deleteOptions(rq *request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readBody(rq.w, rq.r)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(rq.r.Header.Get("Content-Type")); mt == protobufType && len(body) > 0 {
		if _, _, err := protoSerializer.Decode(body, nil, opts); err != nil {
			return nil, apierrors.NewBadRequest("malformed DeleteOptions: " + err.Error())
		}
	} else if len(strings.TrimSpace(string(body))) > 0 {
		data, err := toJSON(rq.r.Header.Get("Content-Type"), body, fvIgnore)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, opts); err != nil {
			return nil, apierrors.NewBadRequest("malformed DeleteOptions: " + err.Error())
		}
	}
	if v := rq.query.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := rq.query.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := rq.query.Get("orphanDependents"); v != "" {
		b := v == "true"
		opts.OrphanDependents = &b
	}
	for _, d := range opts.DryRun {
		if d != "All" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid dryRun %q: only All is supported", d))
		}
		rq.dryRun = true
	}
	return opts, nil
}

// listOptions reads selectors and paging from the query of a list of st.
func listOptions(st *registry.Store, q url.Values) (storage.ListOptions, error) {
	pred, err := st.Predicate(q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return storage.ListOptions{}, err
	}
	opts := storage.ListOptions{ResourceVersion: q.Get("resourceVersion"), ResourceVersionMatch: q.Get("resourceVersionMatch"),
		Continue: q.Get("continue"), Predicate: pred}
	if opts.ResourceVersionMatch == "" && opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
		// Upstream's default for a list at resourceVersion N: "not older than" N, which
		// the watch cache serves (docs/storage.md, "Reads from the watch cache").
		opts.ResourceVersionMatch = storage.MatchNotOlderThan
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return opts, apierrors.NewBadRequest(fmt.Sprintf("invalid limit %q", v))
		}
		opts.Limit = n
	}
	if opts.Continue != "" {
		opts.ResourceVersion = "" // the continue token carries the revision
	}
	return opts, nil
}

func (s *Server) serveList(ctx context.Context, rq *request, st *registry.Store) error {
	opts, err := listOptions(st, rq.query)
	if err != nil {
		return err
	}
	if st.Resource.Custom != nil {
		return s.serveCustomList(ctx, rq, st, opts) // customlist.go
	}
	list, err := st.Storage.List(ctx, st.Prefix(rq.info.namespace), opts)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) && opts.Continue != "" {
			return apierrors.NewResourceExpired("the provided continue parameter is too old to display a consistent list result; start a new list without it")
		}
		return st.APIError(err, "")
	}
	return s.respond(rq, http.StatusOK, list)
}

func (s *Server) serveDeleteCollection(ctx context.Context, rq *request, st *registry.Store) error {
	opts, err := s.deleteOptions(rq)
	if err != nil {
		return err
	}
	lopts, err := listOptions(st, rq.query)
	if err != nil {
		return err
	}
	lopts.Limit, lopts.Continue, lopts.ResourceVersion = 0, "", ""
	list, err := st.Storage.List(ctx, st.Prefix(rq.info.namespace), lopts)
	if err != nil {
		return st.APIError(err, "")
	}
	items, err := listItems(list)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	for _, it := range items {
		m := registry.ObjMeta(it)
		irq := *rq
		ii := *rq.info
		ii.namespace, ii.name, ii.verb = m.GetNamespace(), m.GetName(), "delete"
		irq.info = &ii
		if _, _, err := st.Delete(ctx, irq.write(), m.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	writeJSON(rq.w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}, outJSON)
	return nil
}

func (s *Server) serveWatch(ctx context.Context, rq *request, st *registry.Store) error {
	q := rq.query
	pred, err := st.Predicate(q.Get("labelSelector"), q.Get("fieldSelector"))
	if err != nil {
		return err
	}
	timeout := 30*time.Minute + time.Duration(time.Now().UnixNano()%int64(30*time.Minute))
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("invalid timeoutSeconds %q", v))
		}
		if n > 0 {
			timeout = time.Duration(n) * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	rv := q.Get("resourceVersion")
	initial := q.Get("sendInitialEvents") == "true"
	if q.Get("sendInitialEvents") != "" && q.Get("resourceVersionMatch") != string(metav1.ResourceVersionMatchNotOlderThan) {
		return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("resourceVersionMatch"), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")})
	}
	if initial && !bookmarks {
		return apierrors.NewInvalid(schema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath("allowWatchBookmarks"), "sendInitialEvents requires allowWatchBookmarks=true")})
	}

	w := rq.w
	flusher, _ := w.(http.Flusher)
	enc := newWatchEncoder(w, rq.format == outProtobuf && protobufCapable(st.Resource))
	started := false
	start := func() {
		if !started {
			w.Header().Set("Content-Type", enc.contentType())
			w.WriteHeader(http.StatusOK)
			started = true
		}
	}
	send := func(t watch.EventType, obj runtime.Object) error {
		start()
		var out any = obj
		if t != watch.Error && t != watch.Bookmark {
			o, err := s.transform(rq, obj)
			if err != nil {
				return err
			}
			out = o
		} else if t == watch.Bookmark {
			ensureKind(obj, st.Resource.GVK())
		}
		return enc.encode(t, out)
	}
	sendErr := func(err error) {
		st := toStatus(err)
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		_ = send(watch.Error, &st)
		if flusher != nil {
			flusher.Flush()
		}
	}

	// sendInitialEvents: the current state as ADDED events, then a bookmark marking its
	// end, then changes from the revision that state was read at.
	if initial {
		list, err := st.Storage.List(ctx, st.Prefix(rq.info.namespace), storage.ListOptions{Predicate: pred})
		if err != nil {
			sendErr(st.APIError(err, ""))
			return nil
		}
		items, err := listItems(list)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		for _, it := range items {
			if err := send(watch.Added, it); err != nil {
				return nil
			}
		}
		lm, _ := metaList(list)
		rv = lm
		bm := st.Resource.NewFunc()
		registry.ObjMeta(bm).SetResourceVersion(rv)
		registry.ObjMeta(bm).SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		if err := send(watch.Bookmark, bm); err != nil {
			return nil
		}
		if flusher != nil {
			flusher.Flush()
		}
	}

	// Built-in objects sent as they are stored (no Table, metadata-only or version
	// view) share their encodings with the other watchers of each event: each event is
	// encoded once per content type, not once per watcher (watchencode.go).
	shared := (rq.format == outJSON || rq.format == outProtobuf || rq.format == outYAML) && st.Resource.Custom == nil
	wi, err := st.Storage.Watch(ctx, st.Prefix(rq.info.namespace), storage.WatchOptions{ResourceVersion: rv, Predicate: pred, AllowBookmarks: bookmarks,
		IndexValue: st.IndexValue(q.Get("fieldSelector")), SharedEncodings: shared})
	if err != nil {
		// Upstream answers an expired resourceVersion with an ERROR event, which makes
		// reflectors relist; other errors are plain statuses.
		if errors.Is(err, storage.ErrExpired) || started {
			sendErr(st.APIError(err, ""))
			return nil
		}
		return st.APIError(err, "")
	}
	defer wi.Stop()
	start()
	if flusher != nil {
		flusher.Flush()
	}
	ch := wi.ResultChan()
	stopping := s.stoppedCh()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-stopping:
			return nil
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			if ev.Type == watch.Error {
				if stt, ok := ev.Object.(*metav1.Status); ok {
					stt.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
				}
				_ = enc.encode(watch.Error, ev.Object)
				if flusher != nil {
					flusher.Flush()
				}
				return nil
			}
			if err := send(ev.Type, ev.Object); err != nil {
				return nil
			}
			// Flush when the queue is drained, so bursts go out in few writes.
			if len(ch) == 0 && flusher != nil {
				flusher.Flush()
			}
		}
	}
}
