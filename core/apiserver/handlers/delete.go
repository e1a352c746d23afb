package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

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
