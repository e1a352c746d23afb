package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// Get answers a GET of one object.
func Get(ctx context.Context, rq *Request, st *registry.Store) error {
	info := rq.Info
	obj, err := st.Get(ctx, st.Key(info.Namespace, info.Name), rq.Query.Get("resourceVersion"))
	if err != nil {
		return st.APIError(err, info.Name)
	}
	return Respond(rq, http.StatusOK, obj)
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
