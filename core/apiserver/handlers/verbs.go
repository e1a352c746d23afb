// Package handlers serves the API's verbs on one resource, as k8s.io/apiserver's
// endpoints/handlers: Get, List, Watch, Create, Update, Patch, Delete and
// DeleteCollection each decode what the request carries (body, patch, query, delete
// options), call the resource's registry.Store and write the answer in the format the
// client asked for (JSON, YAML, protobuf, Table, PartialObjectMetadata, watch streams).
// Routing, authentication and authorization are the caller's (core/apiserver).
package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// RequestInfo is what authorization and admission need to know about a request.
type RequestInfo struct {
	ResourceRequest bool
	Verb            string // get list watch create update patch delete deletecollection
	Resource        *registry.Resource
	Namespace       string
	Name            string
	Subresource     string
}

// Request is one API call being served.
type Request struct {
	W               http.ResponseWriter
	Req             *http.Request
	Info            *RequestInfo
	User            admission.UserInfo
	Query           url.Values
	Format          OutputFormat
	DryRun          bool
	FieldValidation fieldValidation
	warnings        []string
}

// Get answers a GET of one object.
func Get(ctx context.Context, rq *Request, st *registry.Store) error {
	info := rq.Info
	obj, err := st.Get(ctx, st.Key(info.Namespace, info.Name), rq.Query.Get("resourceVersion"))
	if err != nil {
		return st.APIError(err, info.Name)
	}
	return Respond(rq, http.StatusOK, obj)
}

// Create decodes, admits and stores a new object; created runs after a create that
// was stored.
func Create(ctx context.Context, rq *Request, st *registry.Store, created func(context.Context, *registry.Store, runtime.Object)) error {
	info := rq.Info
	obj, err := DecodeRequest(rq, st.Resource)
	if err != nil {
		return err
	}
	out, err := st.Create(ctx, rq.ForStore(), obj)
	if err != nil {
		return err
	}
	if !rq.DryRun && created != nil {
		created(ctx, st, out)
	}
	if st.Resource.Custom != nil && info.Subresource == "" {
		return respondWritten(rq, st, http.StatusCreated, out) // customlist.go
	}
	return Respond(rq, http.StatusCreated, out)
}

// Update replaces an object (PUT); a resourceVersion in the body is a precondition.
func Update(ctx context.Context, rq *Request, st *registry.Store) error {
	in, err := DecodeRequest(rq, st.Resource)
	if err != nil {
		return err
	}
	var pre *storage.Preconditions
	if rv := registry.ObjMeta(in).GetResourceVersion(); rv != "" {
		pre = &storage.Preconditions{ResourceVersion: &rv}
	}
	out, err := st.Update(ctx, rq.ForStore(), rq.Info.Name, pre, func(runtime.Object) (runtime.Object, error) { return in.DeepCopyObject(), nil })
	if err != nil {
		return err
	}
	return Respond(rq, http.StatusOK, out)
}

// Patch applies a JSON, merge or strategic merge patch to the current object, or serves
// a server-side apply.
func Patch(ctx context.Context, rq *Request, st *registry.Store) error {
	pt := patchType(rq.Req)
	if err := fieldmanager.ValidatePatchOptions(pt, rq.Query.Get("fieldManager"), forceParam(rq.Query)); err != nil {
		return err
	}
	if fieldmanager.IsApply(pt) {
		return serveApply(ctx, rq, st) // apply.go
	}
	apply, err := Patcher(rq, st.Resource)
	if err != nil {
		return err
	}
	out, err := st.Update(ctx, rq.ForStore(), rq.Info.Name, nil, func(cur runtime.Object) (runtime.Object, error) {
		return apply(cur)
	})
	if err != nil {
		return err
	}
	return Respond(rq, http.StatusOK, out)
}

// Delete deletes one object: 200 with the object (pods) or a Status when it is gone,
// 202 with the object when it is only marked (graceful deletion, finalizers).
func Delete(ctx context.Context, rq *Request, st *registry.Store) error {
	info := rq.Info
	opts, err := deleteOptions(rq)
	if err != nil {
		return err
	}
	obj, deleted, err := st.Delete(ctx, rq.ForStore(), info.Name, opts)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !deleted {
		code = http.StatusAccepted
	}
	if st.Resource.GVR.Resource == "pods" || !deleted {
		return Respond(rq, code, obj)
	}
	m := registry.ObjMeta(obj)
	WriteJSON(rq.W, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: m.GetName(), Group: st.Resource.GVR.Group, Kind: st.Resource.GVR.Resource, UID: m.GetUID()}}, OutJSON)
	return nil
}

// DecodeRequest reads and decodes the body as an object of res.
func DecodeRequest(rq *Request, res *registry.Resource) (runtime.Object, error) {
	obj := res.NewFunc()
	if err := decodeBody(rq, res, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// ForStore is what the store needs of rq for a create, update or delete.
func (rq *Request) ForStore() *registry.WriteRequest {
	return &registry.WriteRequest{Namespace: rq.Info.Namespace, Subresource: rq.Info.Subresource, User: rq.User, DryRun: rq.DryRun, Warn: rq.addWarnings,
		Manager: managerOf(rq)}
}

func (rq *Request) addWarnings(ws []string) {
	for _, w := range ws {
		rq.W.Header().Add("Warning", `299 - `+strconv.Quote(w))
	}
}

// deleteOptions merges the DeleteOptions body with the query parameters.
func deleteOptions(rq *Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := ReadBody(rq.W, rq.Req)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(rq.Req.Header.Get("Content-Type")); mt == protobufType && len(body) > 0 {
		if _, _, err := protoSerializer.Decode(body, nil, opts); err != nil {
			return nil, apierrors.NewBadRequest("malformed DeleteOptions: " + err.Error())
		}
	} else if len(strings.TrimSpace(string(body))) > 0 {
		data, err := toJSON(rq.Req.Header.Get("Content-Type"), body, fvIgnore)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, opts); err != nil {
			return nil, apierrors.NewBadRequest("malformed DeleteOptions: " + err.Error())
		}
	}
	if v := rq.Query.Get("gracePeriodSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid gracePeriodSeconds %q", v))
		}
		opts.GracePeriodSeconds = &n
	}
	if v := rq.Query.Get("propagationPolicy"); v != "" {
		p := metav1.DeletionPropagation(v)
		opts.PropagationPolicy = &p
	}
	if v := rq.Query.Get("orphanDependents"); v != "" {
		b := v == "true"
		opts.OrphanDependents = &b
	}
	for _, d := range opts.DryRun {
		if d != "All" {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid dryRun %q: only All is supported", d))
		}
		rq.DryRun = true
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

func List(ctx context.Context, rq *Request, st *registry.Store) error {
	opts, err := listOptions(st, rq.Query)
	if err != nil {
		return err
	}
	if st.Resource.Custom != nil {
		return serveCustomList(ctx, rq, st, opts) // customlist.go
	}
	list, err := st.Storage.List(ctx, st.Prefix(rq.Info.Namespace), opts)
	if err != nil {
		if errors.Is(err, storage.ErrExpired) && opts.Continue != "" {
			return apierrors.NewResourceExpired("the provided continue parameter is too old to display a consistent list result; start a new list without it")
		}
		return st.APIError(err, "")
	}
	return Respond(rq, http.StatusOK, list)
}

func DeleteCollection(ctx context.Context, rq *Request, st *registry.Store) error {
	opts, err := deleteOptions(rq)
	if err != nil {
		return err
	}
	lopts, err := listOptions(st, rq.Query)
	if err != nil {
		return err
	}
	lopts.Limit, lopts.Continue, lopts.ResourceVersion = 0, "", ""
	list, err := st.Storage.List(ctx, st.Prefix(rq.Info.Namespace), lopts)
	if err != nil {
		return st.APIError(err, "")
	}
	items, err := ListItems(list)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	for _, it := range items {
		m := registry.ObjMeta(it)
		irq := *rq
		ii := *rq.Info
		ii.Namespace, ii.Name, ii.Verb = m.GetNamespace(), m.GetName(), "delete"
		irq.Info = &ii
		if _, _, err := st.Delete(ctx, irq.ForStore(), m.GetName(), opts); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	WriteJSON(rq.W, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}, OutJSON)
	return nil
}

// stopping is closed when the server shuts down: the stream ends then.
func Watch(ctx context.Context, rq *Request, st *registry.Store, stopping <-chan struct{}) error {
	q := rq.Query
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

	w := rq.W
	flusher, _ := w.(http.Flusher)
	enc := newWatchEncoder(w, rq.Format == outProtobuf && protobufCapable(st.Resource))
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
			o, err := transform(rq, obj)
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
		list, err := st.Storage.List(ctx, st.Prefix(rq.Info.Namespace), storage.ListOptions{Predicate: pred})
		if err != nil {
			sendErr(st.APIError(err, ""))
			return nil
		}
		items, err := ListItems(list)
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
	shared := (rq.Format == OutJSON || rq.Format == outProtobuf || rq.Format == outYAML) && st.Resource.Custom == nil
	wi, err := st.Storage.Watch(ctx, st.Prefix(rq.Info.Namespace), storage.WatchOptions{ResourceVersion: rv, Predicate: pred, AllowBookmarks: bookmarks,
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
