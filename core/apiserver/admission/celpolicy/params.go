package celpolicy

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// paramSource finds a policy's paramKind among the served resources and reads its
// objects from the API server's watch cache, in the shape of the informer upstream's
// CollectParams takes (it calls Lister and Informer().HasSynced, nothing else).
func paramSource(r admission.ObjectReader, pk *admissionregistrationv1.ParamKind) (informers.GenericInformer, meta.RESTScope, error) {
	gv, err := schema.ParseGroupVersion(pk.APIVersion)
	if err != nil {
		return nil, nil, fmt.Errorf("paramKind.apiVersion %q: %w", pk.APIVersion, err)
	}
	gvk := gv.WithKind(pk.Kind)
	// The reader names resources by plural; the plural of a kind is upstream's guess,
	// checked against what the server serves under that name.
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	got, namespaced, ok := r.Resource(plural.Resource)
	if !ok || got != gvk {
		return nil, nil, fmt.Errorf("failed to find resource referenced by paramKind: '%v'", gvk)
	}
	scope := meta.RESTScopeRoot
	if namespaced {
		scope = meta.RESTScopeNamespace
	}
	return paramInformer{r: r, resource: plural.Resource, gr: plural.GroupResource()}, scope, nil
}

type paramInformer struct {
	r        admission.ObjectReader
	resource string
	gr       schema.GroupResource
}

func (p paramInformer) Informer() cache.SharedIndexInformer { return synced{} }
func (p paramInformer) Lister() cache.GenericLister         { return paramLister{p: p} }

// synced is always synced: the reader waits for its cache on first use.
type synced struct{ cache.SharedIndexInformer }

func (synced) HasSynced() bool { return true }

type paramLister struct {
	p  paramInformer
	ns string
}

func (l paramLister) ByNamespace(ns string) cache.GenericNamespaceLister {
	return paramLister{p: l.p, ns: ns}
}

func (l paramLister) List(sel labels.Selector) ([]runtime.Object, error) {
	objs, err := l.p.r.List(context.Background(), l.p.resource, l.ns)
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(m.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (l paramLister) Get(name string) (runtime.Object, error) {
	o, err := l.p.r.Get(context.Background(), l.p.resource, l.ns, name)
	if errors.Is(err, admission.ErrNotFound) {
		return nil, apierrors.NewNotFound(l.p.gr, name)
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u, err
	}
	return o, err
}
