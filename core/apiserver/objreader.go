package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
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
	caches map[string]*objectCache
}

func newObjectReader(ctx context.Context, s *Server) *objectReader {
	r := &objectReader{s: s, ctx: ctx, byName: map[string]*registry.Store{}, caches: map[string]*objectCache{}}
	for gvr, st := range s.stores {
		if st.Resource.StoredAs != nil {
			// A version view (versions.go) shares its resource name with the stored
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

func (r *objectReader) cache(ctx context.Context, res string) (*objectCache, *registry.Store, error) {
	st, ok := r.byName[res]
	if !ok {
		return nil, nil, fmt.Errorf("resource %q is not served", res)
	}
	r.mu.Lock()
	c, ok := r.caches[res]
	if !ok {
		c = &objectCache{st: st, synced: make(chan struct{})}
		r.caches[res] = c
		go c.run(r.ctx)
	}
	r.mu.Unlock()
	select {
	case <-c.synced:
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
	c.mu.RLock()
	obj, ok := c.m[st.Key(ns, name)]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s %s/%s", admission.ErrNotFound, res, ns, name)
	}
	return obj, nil
}

// List implements admission.ObjectReader.
func (r *objectReader) List(ctx context.Context, res, ns string) ([]runtime.Object, error) {
	c, st, err := r.cache(ctx, res)
	if err != nil {
		return nil, err
	}
	prefix := st.Prefix(ns)
	c.mu.RLock()
	var keys []string
	for k := range c.m {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = c.m[k]
	}
	c.mu.RUnlock()
	return out, nil
}

// objectCache is every object of one resource, by key, from a list and a watch.
type objectCache struct {
	st       *registry.Store
	mu       sync.RWMutex
	m        map[string]runtime.Object
	synced   chan struct{}
	syncOnce sync.Once
	// changed, when set, is called after the cache changed (a relist or an event).
	changed func()
}

func (c *objectCache) notify() {
	if c.changed != nil {
		c.changed()
	}
}

func (c *objectCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (c *objectCache) listAndWatch(ctx context.Context) error {
	list, err := c.st.Storage.List(ctx, c.st.Prefix(""), storage.ListOptions{})
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return err
	}
	m := make(map[string]runtime.Object, len(items))
	for _, it := range items {
		om := registry.ObjMeta(it)
		m[c.st.Key(om.GetNamespace(), om.GetName())] = it
	}
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
	c.syncOnce.Do(func() { close(c.synced) })
	c.notify()
	w, err := c.st.Storage.Watch(ctx, c.st.Prefix(""), storage.WatchOptions{ResourceVersion: lm.GetResourceVersion()})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
			continue
		}
		om, err := meta.Accessor(ev.Object)
		if err != nil {
			continue
		}
		key := c.st.Key(om.GetNamespace(), om.GetName())
		c.mu.Lock()
		if ev.Type == watch.Deleted {
			delete(c.m, key)
		} else {
			c.m[key] = ev.Object
		}
		c.mu.Unlock()
		c.notify()
	}
	return errors.New("watch ended")
}
