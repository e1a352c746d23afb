package apiserver

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/storage"
)

// objCache keeps every object of one resource in memory from a watch, for readers that
// accept a moment's lag, as upstream's admission plugins read through informers: the
// ServiceAccount admission plugin looks up the pod's account on every pod create, and an
// etcd read for it was about 2% of the scheduler bench's CPU. An object the cache has not
// seen (created a moment ago, or before the watch delivered it) is read from storage.
// The watch starts on the first get and ends when the server stops.
type objCache struct {
	st    *store
	start sync.Once
	mu    sync.RWMutex
	m     map[string]runtime.Object // by storage key
}

func newObjCache(st *store) *objCache { return &objCache{st: st, m: map[string]runtime.Object{}} }

// get returns the object at ns/name, from memory when the watch has delivered it, else
// from storage; (nil, nil) when there is none. The object is shared: read-only.
func (c *objCache) get(ctx context.Context, stop <-chan struct{}, ns, name string) (runtime.Object, error) {
	c.start.Do(func() {
		wctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-stop:
			case <-wctx.Done():
			}
			cancel()
		}()
		go c.run(wctx)
	})
	key := c.st.key(ns, name)
	c.mu.RLock()
	obj, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return obj, nil
	}
	obj, err := c.st.s.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	return obj, err
}

// run follows the resource until ctx ends, re-watching (from a fresh state) after errors.
func (c *objCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := c.st.s.Watch(ctx, c.st.prefix(""), storage.WatchOptions{})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		c.mu.Lock()
		c.m = map[string]runtime.Object{}
		c.mu.Unlock()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified && ev.Type != watch.Deleted {
				continue
			}
			m := objMeta(ev.Object)
			key := c.st.key(m.GetNamespace(), m.GetName())
			c.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(c.m, key)
			} else {
				c.m[key] = ev.Object
			}
			c.mu.Unlock()
		}
		w.Stop()
	}
	c.mu.Lock()
	c.m = map[string]runtime.Object{}
	c.mu.Unlock()
}
