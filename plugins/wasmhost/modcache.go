package wasmhost

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
)

// idleModules is how many compiled modules that no plugin uses any more the host keeps,
// so that a swap back to a recent version (or a policy renamed, or the same module under
// another name) compiles and checks nothing.
const idleModules = 16

// moduleKey identifies a compiled module: its bytes and the runtime's memory limit (the
// one property of the runtime that differs between plugins).
type moduleKey struct {
	sum              [32]byte
	pages            uint64
	contextInterrupt bool
}

// compiledModule is a module compiled in its own runtime and checked against the ABI,
// shared by every Module of the same key.
type compiledModule struct {
	rt        wazero.Runtime
	compiled  wazero.CompiledModule
	kinds     Kinds
	hasInit   bool
	interrupt Interrupt

	key   moduleKey
	refs  int           // guarded by moduleCache.mu
	ready chan struct{} // closed once compiled (or failed: err)
	err   error
}

// moduleCache is the host's compiled modules by content hash. Concurrent loads of the same
// bytes compile once; a failed compile is not kept, so broken bytes are tried anew each
// time they are loaded.
type moduleCache struct {
	mu   sync.Mutex
	byID map[moduleKey]*compiledModule
	idle []*compiledModule // unused, oldest first
}

// acquire returns the compiled module of key, compiling it with build when no load has.
func (c *moduleCache) acquire(key moduleKey, build func() (*compiledModule, error)) (*compiledModule, error) {
	c.mu.Lock()
	if c.byID == nil {
		c.byID = map[moduleKey]*compiledModule{}
	}
	if cm, ok := c.byID[key]; ok {
		cm.refs++
		c.unidle(cm)
		c.mu.Unlock()
		<-cm.ready
		if cm.err != nil {
			c.release(cm)
			return nil, cm.err
		}
		return cm, nil
	}
	cm := &compiledModule{key: key, refs: 1, ready: make(chan struct{})}
	c.byID[key] = cm
	c.mu.Unlock()

	built, err := build()
	c.mu.Lock()
	if err != nil {
		cm.err = err
		delete(c.byID, key)
	} else {
		cm.rt, cm.compiled, cm.kinds, cm.hasInit, cm.interrupt = built.rt, built.compiled, built.kinds, built.hasInit, built.interrupt
	}
	close(cm.ready)
	c.mu.Unlock()
	if err != nil {
		c.release(cm)
		return nil, err
	}
	return cm, nil
}

// release drops a reference; an unused module joins the idle list, and the oldest idle
// ones beyond idleModules are closed.
func (c *moduleCache) release(cm *compiledModule) {
	c.mu.Lock()
	cm.refs--
	var evicted []*compiledModule
	if cm.refs == 0 && cm.err == nil && c.byID[cm.key] == cm {
		c.idle = append(c.idle, cm)
		for len(c.idle) > idleModules {
			old := c.idle[0]
			c.idle = c.idle[1:]
			delete(c.byID, old.key)
			evicted = append(evicted, old)
		}
	}
	c.mu.Unlock()
	for _, old := range evicted {
		_ = old.rt.Close(context.Background())
	}
}

// ref takes another reference on cm, which a module in use holds already.
func (c *moduleCache) ref(cm *compiledModule) {
	c.mu.Lock()
	cm.refs++
	c.unidle(cm)
	c.mu.Unlock()
}

// unidle takes cm off the idle list; c.mu is held.
func (c *moduleCache) unidle(cm *compiledModule) {
	for i, x := range c.idle {
		if x == cm {
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return
		}
	}
}

// closeIdle closes every unused module.
func (c *moduleCache) closeIdle(ctx context.Context) {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	for _, cm := range idle {
		delete(c.byID, cm.key)
	}
	c.mu.Unlock()
	for _, cm := range idle {
		_ = cm.rt.Close(ctx)
	}
}

// moduleRef is one Module's reference to its compiled module, released once.
type moduleRef struct {
	cache    *moduleCache
	cm       *compiledModule
	released atomic.Bool
}

func (r *moduleRef) release() {
	if r.released.CompareAndSwap(false, true) {
		r.cache.release(r.cm)
	}
}
