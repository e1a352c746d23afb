package wasmhost

import (
	"context"
	"sync"
)

// Lifetimes (docs/plugins.md, "Lifetimes: sets and leases"). A loaded plugin is a Loaded:
// its module and the pools made from it, closed together. Loaded plugins go in force in
// a Set, one per applied config: a request, a probe or a scheduling cycle Acquires the set
// in force and Releases it when done; a config swap Retires the set it replaces. A
// retired set lets go of its plugins when its last user releases it, and a plugin closes
// when the last set holding it lets go (a plugin kept by a swap is held by both sets).
// Nothing waits for the garbage collector, and nothing is closed under a call, as with
// containerd's leases and the scheduler framework's Close.

// Loaded is one loaded plugin: a module and the pools made from it.
type Loaded struct {
	mod *Module

	mu     sync.Mutex
	pools  []*Pool
	holds  int
	closed bool
}

// NewLoaded takes over m: the Loaded closes it.
func NewLoaded(m *Module) *Loaded { return &Loaded{mod: m} }

// Module is the plugin's module.
func (l *Loaded) Module() *Module { return l.mod }

// NewPool makes a pool of the module (Module.NewPool) that closes with the plugin.
func (l *Loaded) NewPool(ctx context.Context, args []byte, size int) (*Pool, error) {
	p, err := l.mod.NewPool(ctx, args, size)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.pools = append(l.pools, p)
	l.mu.Unlock()
	return p, nil
}

// Close closes the pools, then the module, now: for a plugin that never went in force (a
// failed or superseded build). Closing twice does nothing.
func (l *Loaded) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	pools := l.pools
	l.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
	_ = l.mod.Close(context.Background())
}

// Closed reports whether the plugin was closed.
func (l *Loaded) Closed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func (l *Loaded) hold() {
	l.mu.Lock()
	l.holds++
	l.mu.Unlock()
}

func (l *Loaded) drop() {
	l.mu.Lock()
	l.holds--
	last := l.holds == 0
	l.mu.Unlock()
	if last {
		l.Close()
	}
}

// Set is the plugins of one applied config.
type Set struct {
	plugins []*Loaded

	mu      sync.Mutex
	users   int
	retired bool
	done    bool
}

// NewSet holds plugins (each may be in other sets too) until the set is retired and its
// last user has released it.
func NewSet(plugins ...*Loaded) *Set {
	for _, l := range plugins {
		l.hold()
	}
	return &Set{plugins: plugins}
}

// Acquire registers a user of the set (a request, a call, a cycle); false once the set was
// retired: the caller takes the set that replaced it.
func (s *Set) Acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired {
		return false
	}
	s.users++
	return true
}

// Release ends a use registered with Acquire.
func (s *Set) Release() {
	s.mu.Lock()
	s.users--
	last := s.retired && s.users == 0 && !s.done
	if last {
		s.done = true
	}
	s.mu.Unlock()
	if last {
		s.letGo()
	}
}

// Retire marks the set replaced: later Acquires fail, and its plugins are let go now or
// when its last user releases it. Retiring twice does nothing.
func (s *Set) Retire() {
	s.mu.Lock()
	s.retired = true
	idle := s.users == 0 && !s.done
	if idle {
		s.done = true
	}
	s.mu.Unlock()
	if idle {
		s.letGo()
	}
}

func (s *Set) letGo() {
	for _, l := range s.plugins {
		l.drop()
	}
}
