package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

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
