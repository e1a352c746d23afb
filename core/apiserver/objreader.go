package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// objectReader is the admission.ObjectReader of the API server: an in-memory copy of
// each resource a plugin reads, kept by a list and then a watch on the store (so through
// storage's watch cache, which shares one etcd watch per resource), started on the
// first read of the resource. Namespaces come from the namespace cache.
type objectReader struct {
	s      *Server
	ctx    context.Context
	byName map[string]*registry.Store
	mu     sync.Mutex
	caches map[string]*registry.Cache
}

func newObjectReader(ctx context.Context, s *Server) *objectReader {
	r := &objectReader{s: s, ctx: ctx, byName: map[string]*registry.Store{}, caches: map[string]*registry.Cache{}}
	for gvr, st := range s.stores {
		if st.Resource.StoredAs != nil {
			// A version view (registry/versions.go) shares its resource name with the stored
			// version: policies read the stored one, as they always did.
			continue
		}
		r.byName[gvr.Resource] = st
	}
	return r
}

// Resource implements admission.ObjectReader.
func (r *objectReader) Resource(res string) (schema.GroupVersionKind, bool, bool) {
	st, ok := r.byName[res]
	if !ok {
		return schema.GroupVersionKind{}, false, false
	}
	return st.Resource.GVK(), st.Resource.Namespaced, true
}

func (r *objectReader) cache(ctx context.Context, res string) (*registry.Cache, *registry.Store, error) {
	st, ok := r.byName[res]
	if !ok {
		return nil, nil, fmt.Errorf("resource %q is not served", res)
	}
	r.mu.Lock()
	c, ok := r.caches[res]
	if !ok {
		c = registry.NewCache(r.ctx, st, nil)
		r.caches[res] = c
	}
	r.mu.Unlock()
	select {
	case <-c.Synced():
		return c, st, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

// Get implements admission.ObjectReader.
func (r *objectReader) Get(ctx context.Context, res, ns, name string) (runtime.Object, error) {
	if res == "namespaces" {
		obj, err := r.s.getNamespace(ctx, name)
		if errors.Is(err, admission.ErrNamespaceNotFound) {
			return nil, fmt.Errorf("%w: namespace %s", admission.ErrNotFound, name)
		}
		if err != nil {
			return nil, err
		}
		return obj, nil
	}
	c, st, err := r.cache(ctx, res)
	if err != nil {
		return nil, err
	}
	if !st.Resource.Namespaced {
		ns = ""
	}
	obj, ok := c.Get(ns, name)
	if !ok {
		return nil, fmt.Errorf("%w: %s %s/%s", admission.ErrNotFound, res, ns, name)
	}
	return obj, nil
}

// List implements admission.ObjectReader.
func (r *objectReader) List(ctx context.Context, res, ns string) ([]runtime.Object, error) {
	c, _, err := r.cache(ctx, res)
	if err != nil {
		return nil, err
	}
	return c.Objects(ns), nil
}
