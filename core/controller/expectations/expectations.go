// Package expectations records the pod creations and deletions a controller has asked for
// but not yet seen in its informer cache, as upstream's ReplicaSet controller does. While a
// key has outstanding expectations the controller does not act on its (stale) cache, so a
// slow informer can never make it create or delete the same pods twice.
package expectations

import (
	"sync"
	"time"
)

// TTL bounds how long unobserved expectations block a key: a watch event that is lost
// (for example across a relist) must not stop the controller forever.
const TTL = 5 * time.Minute

type entry struct {
	adds      int
	deletes   map[string]bool // uids the controller deleted and has not yet seen go
	timestamp time.Time
}

// Expectations is safe for concurrent use. The zero value is not ready; use New.
type Expectations struct {
	mu  sync.Mutex
	m   map[string]*entry
	now func() time.Time
}

// New returns empty expectations.
func New() *Expectations { return &Expectations{m: map[string]*entry{}, now: time.Now} }

// ExpectCreations records that n creations for key are in flight.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.get(key)
	en.adds += n
	en.timestamp = e.now()
}

// ExpectDeletions records that the objects with these uids are being deleted for key.
func (e *Expectations) ExpectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en := e.get(key)
	for _, u := range uids {
		en.deletes[u] = true
	}
	en.timestamp = e.now()
}

// CreationObserved lowers the creations in flight for key by one; it is also how a
// controller gives back an expectation whose create call failed.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en, ok := e.m[key]; ok && en.adds > 0 {
		en.adds--
	}
}

// DeletionObserved marks the deletion of uid as seen. Seeing the same uid twice (the
// update that sets deletionTimestamp, then the delete) counts once.
func (e *Expectations) DeletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en, ok := e.m[key]; ok {
		delete(en.deletes, uid)
	}
}

// Satisfied reports whether the controller may trust its cache for key: nothing is in
// flight, or what is in flight has waited longer than TTL.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[key]
	if !ok {
		return true
	}
	if en.adds <= 0 && len(en.deletes) == 0 {
		return true
	}
	return e.now().Sub(en.timestamp) > TTL
}

// Pending returns the creations and deletions still in flight for key.
func (e *Expectations) Pending(key string) (adds, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if en, ok := e.m[key]; ok {
		return en.adds, len(en.deletes)
	}
	return 0, 0
}

// Forget drops everything recorded for key (the owner is gone).
func (e *Expectations) Forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

func (e *Expectations) get(key string) *entry {
	en, ok := e.m[key]
	if !ok {
		en = &entry{deletes: map[string]bool{}}
		e.m[key] = en
	}
	return en
}
