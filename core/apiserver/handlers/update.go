package handlers

import (
	"context"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

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
