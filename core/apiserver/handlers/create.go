package handlers

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

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
