package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/printers"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// ensureKind sets apiVersion/kind when the object has none (stored objects already do;
// writing only when empty keeps shared cached objects untouched).
func ensureKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// ListItems returns the items of a list object.
func ListItems(list runtime.Object) ([]runtime.Object, error) {
	return meta.ExtractList(list)
}

// metaList returns a list's resourceVersion.
func metaList(list runtime.Object) (string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return "", err
	}
	return lm.GetResourceVersion(), nil
}

// Respond writes obj in the format the client asked for.
func Respond(rq *Request, code int, obj runtime.Object) error {
	out, err := transform(rq, obj)
	if err != nil {
		return err
	}
	WriteJSON(rq.W, code, out, rq.Format)
	return nil
}

// transform turns a stored object or list into what goes on the wire: itself, a Table,
// or PartialObjectMetadata.
func transform(rq *Request, obj runtime.Object) (any, error) {
	res := rq.Info.Resource
	obj = customView(res, obj) // a custom object in the request's version (customview.go)
	isList := meta.IsListType(obj)
	if isList {
		ensureKind(obj, res.GVR.GroupVersion().WithKind(res.Kind+"List"))
	} else if rq.Info.Subresource == "" || rq.Info.Subresource == "status" || rq.Info.Subresource == "finalize" {
		ensureKind(obj, res.GVK())
	}
	// Subresources with kinds of their own (Scale) are not converted here; /status is the
	// parent object and gets the parent's columns, as upstream.
	if rq.Format != OutTable && rq.Format != outPartial || rq.Info.Subresource != "" && rq.Info.Subresource != "status" {
		return obj, nil
	}
	var items []runtime.Object
	var lm metav1.ListInterface
	if isList {
		var err error
		if items, err = ListItems(obj); err != nil {
			return nil, err
		}
		lm, _ = meta.ListAccessor(obj)
	} else {
		items = []runtime.Object{obj}
	}
	if rq.Format == outPartial {
		if !isList {
			return partial(obj), nil
		}
		pl := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}}
		pl.ResourceVersion, pl.Continue, pl.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		for _, it := range items {
			pl.Items = append(pl.Items, *partial(it))
		}
		return pl, nil
	}
	var t *metav1.Table
	var err error
	if res.Custom != nil {
		t, err = res.Custom.Table(rq.Req.Context(), items) // the CRD's additionalPrinterColumns
	} else {
		t, err = printers.Table(res.GVK(), items)
	}
	if err != nil {
		return nil, fmt.Errorf("render %s as a table: %w", res.GVR.Resource, err)
	}
	if lm != nil {
		t.ResourceVersion, t.Continue, t.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
	} else {
		t.ResourceVersion = registry.ObjMeta(obj).GetResourceVersion()
	}
	include := rq.Query.Get("includeObject")
	for i := range t.Rows {
		row := &t.Rows[i]
		o := row.Object.Object
		if o == nil && i < len(items) {
			o = items[i]
		}
		if row.Object, err = TableRowObject(o, include); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// TableRowObject is what a table row carries for o under ?includeObject=: o's
// PartialObjectMetadata by default, o itself for Object, nothing for None (as upstream).
func TableRowObject(o runtime.Object, include string) (runtime.RawExtension, error) {
	var v any
	switch include {
	case "None":
		return runtime.RawExtension{}, nil
	case "Object":
		v = o
	default:
		v = partial(o)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Raw: raw}, nil
}

func partial(obj runtime.Object) *metav1.PartialObjectMetadata {
	p := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}}
	if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
		if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
			p.ObjectMeta = *om
		}
	} else if om, ok := partialOf(obj); ok {
		p.ObjectMeta = om
	}
	return p
}

// WriteStatusSuccess writes a Status with code.
func WriteStatusSuccess(w http.ResponseWriter, code int, details *metav1.StatusDetails) {
	WriteJSON(w, code, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code), Details: details}, OutJSON)
}
