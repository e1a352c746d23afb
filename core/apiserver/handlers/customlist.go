package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/crd"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// Lists of custom resources (docs/crds.md, "Reads"). A custom object is stored as JSON and
// served as an unstructured map: decoding every stored value into maps, normalizing it
// (crd.Version.ForRead) and encoding the maps back was most of a list's server time. So
// each store of a served version keeps, per key, the last revision it served: the object
// as served (read-only) and its JSON. A list still reads etcd at the revision it asks for
// (what it returns is exactly what a list that decodes everything would), but decodes
// only the values whose revision it has not served before, and writes the JSON response
// from the kept bytes. The kept objects depend on the compiled CRD version: a CRD change
// compiles new versions, whose stores start empty.

// respondWritten answers a create, update or patch of a custom object: the object as
// written (pruned and defaulted when decoded) is normalized as a read would (ForRead, in
// place: it is the request's own), kept as this revision's served form with its JSON, and
// the JSON is the response. So a list after writes through this server decodes none of
// what they wrote (the first list after 10,000 creates decoded all of them). Objects of
// another version than the request's, dry runs and other formats are answered as reads.
func respondWritten(rq *Request, st *registry.Store, code int, out runtime.Object) error {
	v := st.Resource.Custom
	u, ok := out.(*unstructured.Unstructured)
	if !ok || st.Reads == nil || rq.DryRun || u.GetAPIVersion() != v.GVR.GroupVersion().String() {
		return Respond(rq, code, out)
	}
	rev, err := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	if err != nil {
		return Respond(rq, code, out)
	}
	v.ForRead(u)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return apierrors.NewInternalError(errors.New("encode " + u.GetName() + ": " + err.Error()))
	}
	key := st.Key(u.GetNamespace(), u.GetName())
	st.Reads.Keep(key, &registry.CustomRead{Rev: rev, Obj: u, JSON: b})
	if rq.Format != OutJSON {
		return Respond(rq, code, u) // a copy is normalized again; u stays as kept
	}
	rq.W.Header().Set("Content-Type", "application/json")
	rq.W.WriteHeader(code)
	_, _ = rq.W.Write(b)
	return nil
}

// serveCustomList serves a list of a custom resource from st.reads: label and field
// selectors on the kept objects, paging and resourceVersion as storage's List, JSON (and
// YAML) written from the kept bytes, tables and PartialObjectMetadata from the kept objects.
func serveCustomList(ctx context.Context, rq *Request, st *registry.Store, opts storage.ListOptions) error {
	raw, ok := st.Storage.(storage.RawLister)
	v := st.Resource.Custom
	if !ok || st.Reads == nil {
		list, err := st.Storage.List(ctx, st.Prefix(rq.Info.Namespace), opts)
		if err != nil {
			return listError(st, err, opts)
		}
		if ul, ok := list.(*unstructured.UnstructuredList); ok {
			for i := range ul.Items {
				v.ForRead(&ul.Items[i]) // decoded for this list alone
			}
		}
		return Respond(rq, http.StatusOK, list)
	}
	prefix := st.Prefix(rq.Info.Namespace)
	var items []*registry.CustomRead
	seen := map[string]struct{}{}
	first, last := "", ""
	lm, err := raw.ListRaw(ctx, prefix, opts, func(key string, value []byte, rev int64) (bool, error) {
		r, err := st.Reads.Read(v, key, value, rev)
		if err != nil {
			return false, err
		}
		if first == "" {
			first = key
		}
		last = key
		seen[key] = struct{}{}
		if opts.Predicate != nil && !opts.Predicate(r.Obj) {
			return false, nil
		}
		items = append(items, r)
		return true, nil
	})
	if err != nil {
		return listError(st, err, opts)
	}
	// The range this list read: from the start of prefix (or the first key after the
	// continue token) to its end (or the last key of a page).
	lo, hi := "", ""
	if opts.Continue != "" {
		lo = first
	}
	if lm.Continue != "" {
		hi = last
	}
	if opts.Continue == "" || first != "" {
		st.Reads.Forget(prefix, lo, hi, seen)
	}
	switch rq.Format {
	case OutJSON, outYAML, outProtobuf: // custom resources have no protobuf: JSON, as writeJSON answers
		writeCustomList(rq.W, v, lm, items, rq.Format)
		return nil
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{}, Items: make([]unstructured.Unstructured, len(items))}
	list.SetAPIVersion(v.GVR.GroupVersion().String())
	list.SetKind(v.ListKind)
	list.SetResourceVersion(lm.ResourceVersion)
	if lm.Continue != "" {
		list.SetContinue(lm.Continue)
		list.SetRemainingItemCount(lm.RemainingItemCount)
	}
	for i, r := range items {
		list.Items[i] = *r.Obj // shares the kept map: the table and partial outputs only read it
	}
	return Respond(rq, http.StatusOK, list)
}

func listError(st *registry.Store, err error, opts storage.ListOptions) error {
	if errors.Is(err, storage.ErrExpired) && opts.Continue != "" {
		return apierrors.NewResourceExpired("the provided continue parameter is too old to display a consistent list result; start a new list without it")
	}
	return st.APIError(err, "")
}

// writeCustomList writes {"apiVersion":..,"kind":"<Kind>List","metadata":{..},"items":[..]}
// from the kept JSON of each item.
func writeCustomList(w http.ResponseWriter, v *crd.Version, lm metav1.ListMeta, items []*registry.CustomRead, format OutputFormat) {
	n := 256
	for _, r := range items {
		n += len(r.JSON) + 1
	}
	b := make([]byte, 0, n)
	gv, _ := json.Marshal(v.GVR.GroupVersion().String())
	kind, _ := json.Marshal(v.ListKind)
	meta, _ := json.Marshal(&lm)
	b = append(b, `{"apiVersion":`...)
	b = append(b, gv...)
	b = append(b, `,"kind":`...)
	b = append(b, kind...)
	b = append(b, `,"metadata":`...)
	b = append(b, meta...)
	b = append(b, `,"items":[`...)
	for i, r := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.JSON...)
	}
	b = append(b, "]}"...)
	ct := "application/json"
	if format == outYAML {
		y, err := yaml.JSONToYAML(b)
		if err != nil {
			WriteError(w, apierrors.NewInternalError(err))
			return
		}
		b, ct = y, "application/yaml"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}
