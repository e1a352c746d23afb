package admitwasm

import "sync"

// memo is a concurrent map of values derived from what policies send on every request
// (object_get paths, patch values): the same few strings each time. When it holds max
// entries it starts over, like wasmhost's object cache, so a guest that sends ever new
// ones costs what it would without the memo, and no more memory.
type memo[K comparable, V any] struct {
	mu  sync.RWMutex
	m   map[K]V
	max int
}

func (c *memo[K, V]) get(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

func (c *memo[K, V]) put(k K, v V) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= c.max {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	c.mu.Unlock()
}
