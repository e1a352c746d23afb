package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// patchType is the request's patch type, from its Content-Type.
func patchType(r *http.Request) types.PatchType {
	return types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
}

// forceParam is the query's force, nil when absent (ValidateQuery has checked its form).
func forceParam(q url.Values) *bool {
	if _, ok := q["force"]; !ok {
		return nil
	}
	f := q.Get("force") == "true"
	return &f
}

// managerOf is the manager a write is recorded under in managedFields.
func managerOf(rq *Request) string {
	return fieldmanager.ManagerName(rq.Query.Get("fieldManager"), rq.Req.UserAgent())
}

func (fv fieldValidation) directive() fieldmanager.Validation {
	switch fv {
	case fvStrict:
		return fieldmanager.ValidationStrict
	case fvIgnore:
		return fieldmanager.ValidationIgnore
	}
	return fieldmanager.ValidationWarn
}

// ApplyRequest reads the body and options of a server-side apply, for a subresource whose
// own handler serves apply (/scale); ok is false for a request that is not an apply.
func ApplyRequest(rq *Request) (body []byte, opts fieldmanager.ApplyOptions, ok bool, err error) {
	if !fieldmanager.IsApply(patchType(rq.Req)) {
		return nil, opts, false, nil
	}
	if body, err = ReadBody(rq.W, rq.Req); err != nil {
		return nil, opts, true, err
	}
	if err := checkPatchDepth(body, maxPatchDepth); err != nil {
		return nil, opts, true, err
	}
	opts = fieldmanager.ApplyOptions{Manager: rq.Query.Get("fieldManager"), Force: rq.Query.Get("force") == "true",
		Validation: rq.FieldValidation.directive()}
	return body, opts, true, nil
}

// serveApply serves a server-side apply (application/apply-patch+yaml): merged into the
// object by the resource's field manager, or a create (201) when there is none
// (registry.Store.Apply; docs/server-side-apply.md).
func serveApply(ctx context.Context, rq *Request, st *registry.Store) error {
	body, err := ReadBody(rq.W, rq.Req)
	if err != nil {
		return err
	}
	if err := checkPatchDepth(body, maxPatchDepth); err != nil {
		return err
	}
	opts := fieldmanager.ApplyOptions{Manager: rq.Query.Get("fieldManager"), Force: rq.Query.Get("force") == "true",
		Validation: rq.FieldValidation.directive()}
	out, created, warnings, err := st.Apply(ctx, rq.ForStore(), rq.Info.Name, body, opts)
	rq.addWarnings(warnings)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	if st.Resource.Custom != nil && rq.Info.Subresource == "" {
		return respondWritten(rq, st, code, out) // customlist.go
	}
	return Respond(rq, code, out)
}
