package wasmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
)

// ObjectRecord is an object a replay needs as context, not a request: an object of a
// recorded resource that was already there when the recording began, and every namespace
// (added, updated or deleted) unless namespaces are themselves recorded as requests.
// Replayed policies read these through namespaceSelector, get_object and list_objects.
type ObjectRecord struct {
	// APIVersion is group/version (v1, apps/v1); Resource the plural (pods); Kind its kind.
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	// Object is the object as stored (managed fields left out); nil when Deleted.
	Object  json.RawMessage `json:"object,omitempty"`
	Deleted bool            `json:"deleted,omitempty"`
}

// AdmissionRecord is one write the API server admitted, as the admission chain saw it
// from outside: CREATE (object), UPDATE (object and oldObject), DELETE (oldObject). The
// objects are as stored, after the mutating policies and defaults in force then.
type AdmissionRecord struct {
	Operation  string `json:"operation"`
	APIVersion string `json:"apiVersion"`
	Resource   string `json:"resource"`
	// Subresource is "status" for an update that changed nothing but .status (the
	// recording cannot see which endpoint wrote it, and this is the usual one).
	Subresource string          `json:"subresource,omitempty"`
	Kind        string          `json:"kind"`
	Namespace   string          `json:"namespace,omitempty"`
	Name        string          `json:"name"`
	Object      json.RawMessage `json:"object,omitempty"`
	OldObject   json.RawMessage `json:"oldObject,omitempty"`
}

// admissionWatch is one recorded resource, resolved through discovery.
type admissionWatch struct {
	gvr      schema.GroupVersionResource
	gvk      schema.GroupVersionKind
	requests bool // its writes are requests (else context only: namespaces)
	informer cache.SharedIndexInformer
}

// resolveResources maps --admission names (pods, deployments, deployments.apps) to the
// API server's resources through its discovery, and adds namespaces as context.
func resolveResources(client kubernetes.Interface, names []string) ([]*admissionWatch, error) {
	groups, err := restmapper.GetAPIGroupResources(client.Discovery())
	if err != nil {
		return nil, fmt.Errorf("record: discovery: %w", err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	var out []*admissionWatch
	seen := map[schema.GroupVersionResource]*admissionWatch{}
	add := func(name string, requests bool) error {
		name = strings.TrimSpace(name)
		if name == "" || strings.Contains(name, "/") {
			return fmt.Errorf("admission resource %q: want a resource's plural name (pods, deployments, deployments.apps), no subresource", name)
		}
		gvr, err := mapper.ResourceFor(schema.ParseGroupResource(name).WithVersion(""))
		if err != nil {
			return fmt.Errorf("admission resource %q: not a resource the API server serves: %v", name, err)
		}
		gvk, err := mapper.KindFor(gvr)
		if err != nil {
			return fmt.Errorf("admission resource %q: %v", name, err)
		}
		if w, ok := seen[gvr]; ok {
			w.requests = w.requests || requests
			return nil
		}
		w := &admissionWatch{gvr: gvr, gvk: gvk, requests: requests}
		seen[gvr] = w
		out = append(out, w)
		return nil
	}
	// Namespaces first, so that a replay knows a namespace before its objects.
	nsRequested := false
	for _, n := range names {
		nsRequested = nsRequested || strings.TrimSpace(n) == "namespaces"
	}
	if err := add("namespaces", nsRequested); err != nil {
		return nil, err
	}
	for _, n := range names {
		if err := add(n, true); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// startAdmission starts a dynamic informer per resource and waits for each to list; the
// initial lists are written as context, every later write as a request (or as context for
// namespaces that are not requested).
func startAdmission(ctx context.Context, dyn dynamic.Interface, r *recorder, watches []*admissionWatch) error {
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	for _, w := range watches {
		w.informer = factory.ForResource(w.gvr).Informer()
		_, err := w.informer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return
				}
				if initial || !w.requests {
					r.write(Record{Object: w.object(u, false)})
					return
				}
				r.write(Record{Admission: w.request("CREATE", u, nil)})
			},
			UpdateFunc: func(oldObj, obj any) {
				o, ok1 := oldObj.(*unstructured.Unstructured)
				u, ok2 := obj.(*unstructured.Unstructured)
				if !ok1 || !ok2 || o.GetResourceVersion() == u.GetResourceVersion() {
					return
				}
				if !w.requests {
					r.write(Record{Object: w.object(u, false)})
					return
				}
				if o.GetDeletionTimestamp() == nil && u.GetDeletionTimestamp() != nil {
					// A DELETE that starts a graceful deletion (or waits on finalizers).
					r.write(Record{Admission: w.request("DELETE", nil, o)})
					return
				}
				rec := w.request("UPDATE", u, o)
				if statusOnly(o, u) {
					rec.Subresource = "status"
				}
				r.write(Record{Admission: rec})
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				u, ok := obj.(*unstructured.Unstructured)
				if !ok {
					return
				}
				if !w.requests {
					r.write(Record{Object: w.object(u, true)})
					return
				}
				r.write(Record{Admission: w.request("DELETE", nil, u)})
			},
		})
		if err != nil {
			return err
		}
	}
	for _, w := range watches {
		go w.informer.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			return fmt.Errorf("record: the %s list did not sync: %w", w.gvr.Resource, ctx.Err())
		}
	}
	return nil
}

func (w *admissionWatch) object(u *unstructured.Unstructured, deleted bool) *ObjectRecord {
	rec := &ObjectRecord{APIVersion: w.gvk.GroupVersion().String(), Resource: w.gvr.Resource, Kind: w.gvk.Kind,
		Namespace: u.GetNamespace(), Name: u.GetName(), Deleted: deleted}
	if !deleted {
		rec.Object = w.raw(u)
	}
	return rec
}

func (w *admissionWatch) request(op string, obj, old *unstructured.Unstructured) *AdmissionRecord {
	rec := &AdmissionRecord{Operation: op, APIVersion: w.gvk.GroupVersion().String(), Resource: w.gvr.Resource, Kind: w.gvk.Kind}
	main := obj
	if main == nil {
		main = old
	}
	rec.Namespace, rec.Name = main.GetNamespace(), main.GetName()
	if obj != nil {
		rec.Object = w.raw(obj)
	}
	if old != nil {
		rec.OldObject = w.raw(old)
	}
	return rec
}

// raw is the object's JSON without managed fields, with its apiVersion and kind set.
func (w *admissionWatch) raw(u *unstructured.Unstructured) json.RawMessage {
	u = u.DeepCopy()
	unstructured.RemoveNestedField(u.Object, "metadata", "managedFields")
	u.SetAPIVersion(w.gvk.GroupVersion().String())
	u.SetKind(w.gvk.Kind)
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil
	}
	return b
}

// statusOnly reports whether an update changed nothing but .status (and the metadata
// every write changes).
func statusOnly(old, cur *unstructured.Unstructured) bool {
	strip := func(u *unstructured.Unstructured) map[string]any {
		c := u.DeepCopy().Object
		delete(c, "status")
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(c, "metadata", f)
		}
		return c
	}
	_, hadStatus := old.Object["status"]
	_, hasStatus := cur.Object["status"]
	if !hadStatus && !hasStatus {
		return false
	}
	return reflect.DeepEqual(strip(old), strip(cur))
}
