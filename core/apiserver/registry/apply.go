package registry

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/fieldmanager"
)

// Apply serves a server-side apply (application/apply-patch+yaml) of body to the object
// name: merged into the current object by the resource's field manager under optimistic
// concurrency (a conflict with another writer runs the merge again on the new object),
// or, when there is none and the write is to the main resource, created from the applied
// configuration alone (created is then true), as upstream's apply patcher with
// forceAllowCreate. Admission, validation, dryRun and the strategies are those of any
// update or create; rq.Owned is set, so the write is recorded as the Apply only.
// warnings are fieldValidation=Warn's.
func (st *Store) Apply(ctx context.Context, rq *WriteRequest, name string, body []byte, opts fieldmanager.ApplyOptions) (out runtime.Object, created bool, warnings []string, err error) {
	fm, _, err := st.Resource.FieldManager()
	if err != nil {
		return nil, false, nil, apierrors.NewInternalError(fmt.Errorf("field manager of %s: %w", st.Resource.GVR.GroupResource(), err))
	}
	wr := *rq
	wr.Owned = true
	wr.Manager = opts.Manager
	opts.Subresource = rq.Subresource
	apply := func(live runtime.Object) (runtime.Object, error) {
		obj, ws, err := fm.Apply(live, body, opts)
		if err != nil {
			return nil, err
		}
		warnings = ws
		if u, ok := obj.(*unstructured.Unstructured); ok && st.Resource.Custom != nil {
			st.Resource.Custom.Decode(u) // the schema's defaults (apply already refused unknown fields)
		}
		return obj, nil
	}
	for attempt := 0; attempt < 2; attempt++ {
		out, err = st.Update(ctx, &wr, name, nil, apply)
		if !apierrors.IsNotFound(err) || rq.Subresource != "" || !isMissing(err, st, name) {
			return out, false, warnings, err
		}
		obj, err := apply(fm.New())
		if err != nil {
			return nil, false, warnings, err
		}
		m := ObjMeta(obj)
		if m.GetName() != name {
			return nil, false, warnings, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), name))
		}
		out, err = st.Create(ctx, &wr, obj)
		if !apierrors.IsAlreadyExists(err) {
			return out, err == nil, warnings, err
		}
		// Created by another writer since: merge into it.
	}
	return out, false, warnings, err
}

// isMissing tells a 404 for the object itself from one for something else (its
// namespace, from admission).
func isMissing(err error, st *Store, name string) bool {
	se, ok := err.(apierrors.APIStatus)
	if !ok {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Name == name && d.Kind == st.Resource.GVR.Resource
}

// ScaleOwnership records a write of the resource's Scale (subresource scale) in the
// parent's managedFields: cur is the parent as stored, old the Scale it shows, next the
// request's Scale; next's parent (the change's result) gets the returned entries, and the
// write is then made with rq.Owned. Without a field manager the entries stay cur's.
func (st *Store) ScaleOwnership(cur runtime.Object, old, next *autoscalingv1.Scale, manager string) ([]metav1.ManagedFieldsEntry, error) {
	_, sc, err := st.Resource.FieldManager()
	if err != nil || sc == nil {
		return ObjMeta(cur).GetManagedFields(), nil
	}
	return sc.Update(ObjMeta(cur).GetManagedFields(), old, next, manager)
}

// ScaleApply serves a server-side apply of the resource's Scale: cur is the parent as
// stored, old the Scale it shows. It returns the applied Scale, the parent's entries to
// store (the write is then made with rq.Owned) and the warnings for the client.
func (st *Store) ScaleApply(cur runtime.Object, old *autoscalingv1.Scale, body []byte, opts fieldmanager.ApplyOptions) (*autoscalingv1.Scale, []metav1.ManagedFieldsEntry, []string, error) {
	_, sc, err := st.Resource.FieldManager()
	if err != nil {
		return nil, nil, nil, apierrors.NewInternalError(fmt.Errorf("field manager of %s: %w", st.Resource.GVR.Resource, err))
	}
	if sc == nil {
		return nil, nil, nil, apierrors.NewMethodNotSupported(st.Resource.GVR.GroupResource(), "apply to scale")
	}
	return sc.Apply(ObjMeta(cur).GetManagedFields(), old, body, opts)
}
