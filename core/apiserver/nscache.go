package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/registry"
	"github.com/wasmkube/wasmkube/core/storage"
)

// nsCache keeps every namespace in memory from a watch, so that namespace lifecycle
// admission costs no etcd read on the create path (upstream uses an informer for the same
// reason). A namespace the cache has not seen yet (created a moment ago) is read from
// storage.
type nsCache struct {
	st *registry.Store
	mu sync.RWMutex
	m  map[string]*corev1.Namespace
	// live names namespaces being deleted, read from storage until the time given: the
	// watch may still hold them Active (upstream's forceLiveLookupCache, 30 s).
	live map[string]time.Time
}

const forceLiveLookupTTL = 30 * time.Second

// forceLive makes get read namespace name from storage for the next forceLiveLookupTTL.
func (c *nsCache) forceLive(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.live == nil {
		c.live = map[string]time.Time{}
	}
	for n, until := range c.live {
		if now.After(until) {
			delete(c.live, n)
		}
	}
	c.live[name] = now.Add(forceLiveLookupTTL)
}

// run follows the namespaces until ctx ends, re-watching after errors.
func (c *nsCache) run(ctx context.Context) {
	for ctx.Err() == nil {
		w, err := c.st.Storage.Watch(ctx, storage.Prefix("namespaces", ""), storage.WatchOptions{})
		if err != nil {
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		c.mu.Lock()
		c.m = map[string]*corev1.Namespace{}
		c.mu.Unlock()
		for ev := range w.ResultChan() {
			ns, ok := ev.Object.(*corev1.Namespace)
			if !ok {
				continue
			}
			c.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(c.m, ns.Name)
			} else if ev.Type == watch.Added || ev.Type == watch.Modified {
				c.m[ns.Name] = ns
			}
			c.mu.Unlock()
		}
		w.Stop()
	}
}

func (c *nsCache) get(ctx context.Context, name string) (*corev1.Namespace, error) {
	c.mu.RLock()
	ns, ok := c.m[name]
	if until, live := c.live[name]; live && time.Now().Before(until) {
		ok = false
	}
	c.mu.RUnlock()
	if ok {
		return ns, nil
	}
	obj, err := c.st.Storage.Get(ctx, c.st.Key("", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", admission.ErrNamespaceNotFound, name)
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}
