package registry

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/storage"
)

// Cache is every object of one resource, by key, from a list and a watch.
type Cache struct {
	st       *Store
	mu       sync.RWMutex
	m        map[string]runtime.Object
	syncedCh chan struct{}
	syncOnce sync.Once
	// changed, when set, is called after the cache changed (a relist or an event).
	changed func()
}

// NewCache starts a cache of st's objects, kept until ctx ends; changed may be nil.
func NewCache(ctx context.Context, st *Store, changed func()) *Cache {
	c := &Cache{st: st, syncedCh: make(chan struct{}), changed: changed}
	go c.run(ctx)
	return c
}

// Synced is closed once the cache has its first list.
func (c *Cache) Synced() <-chan struct{} { return c.syncedCh }

// Get returns the cached object ns/name ("" for cluster-scoped resources).
func (c *Cache) Get(ns, name string) (runtime.Object, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	o, ok := c.m[c.st.Key(ns, name)]
	return o, ok
}

// Objects returns the cached objects under ns ("" = all), in key order.
func (c *Cache) Objects(ns string) []runtime.Object {
	prefix := c.st.Prefix(ns)
	c.mu.RLock()
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]runtime.Object, len(keys))
	for i, k := range keys {
		out[i] = c.m[k]
	}
	c.mu.RUnlock()
	return out
}

func (c *Cache) notify() {
	if c.changed != nil {
		c.changed()
	}
}

func (c *Cache) run(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.listAndWatch(ctx); err != nil && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (c *Cache) listAndWatch(ctx context.Context) error {
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
		om := ObjMeta(it)
		m[c.st.Key(om.GetNamespace(), om.GetName())] = it
	}
	c.mu.Lock()
	c.m = m
	c.mu.Unlock()
	c.syncOnce.Do(func() { close(c.syncedCh) })
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
