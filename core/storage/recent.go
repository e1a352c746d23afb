package storage

import "sync"

// recentStates remembers, per key, the stored form and revision of the last state this
// store wrote or read, so that an update or a conditional delete can start from it instead
// of reading the key from etcd first: upstream passes the watch cache's object to
// GuaranteedUpdate for the same reason (cachedExistingObject, origStateIsCurrent=false).
// A remembered state is only a guess: the compare-and-swap on its revision decides, and
// when another writer (or another API server) got there first, the failed transaction's
// Else branch returns the current state and the update is tried again on it. Every
// decision that could end the operation on a guessed state (a precondition, an error of
// the update function, an unchanged object) is taken again on the current state first.
// docs/storage.md, "Updates without a read".
type recentStates struct {
	mu       sync.Mutex
	m        map[string]recentState
	bytes    int // of the remembered data
	maxBytes int
}

type recentState struct {
	data []byte // plain stored form (no Transformer: those resources are not remembered)
	rev  int64
}

// maxRecentBytes bounds the stored forms remembered per resource: about 13,000 pods,
// enough for those in flight between create, bind and their kubelet's first status in a
// 10,000-pod burst.
const maxRecentBytes = 16 << 20

func newRecentStates(maxBytes int) *recentStates {
	return &recentStates{m: map[string]recentState{}, maxBytes: maxBytes}
}

// get returns the state remembered for key.
func (r *recentStates) get(key string) (recentState, bool) {
	if r == nil {
		return recentState{}, false
	}
	r.mu.Lock()
	st, ok := r.m[key]
	r.mu.Unlock()
	return st, ok
}

// put remembers data at rev for key, unless a newer revision is already remembered
// (writes of one key may finish out of order). data must not change afterwards.
func (r *recentStates) put(key string, data []byte, rev int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.m[key]; ok {
		if cur.rev >= rev {
			return
		}
		r.bytes -= len(cur.data)
	}
	// Full: drop arbitrary keys (map order). A dropped key costs one etcd read later.
	for k, st := range r.m {
		if r.bytes+len(data) <= r.maxBytes {
			break
		}
		if k != key {
			delete(r.m, k)
			r.bytes -= len(st.data)
		}
	}
	if len(data) > r.maxBytes {
		delete(r.m, key)
		return
	}
	r.m[key] = recentState{data: data, rev: rev}
	r.bytes += len(data)
}

// forget drops key (deleted, or its remembered state proved wrong).
func (r *recentStates) forget(key string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if st, ok := r.m[key]; ok {
		r.bytes -= len(st.data)
		delete(r.m, key)
	}
	r.mu.Unlock()
}

func (r *recentStates) len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m)
}
