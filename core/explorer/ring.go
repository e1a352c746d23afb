// Package explorer keeps a component's decision records and serves them: a bounded ring
// (Ring), an asynchronous recorder that builds records off the component's hot path
// (Recorder), the push of a scheduler's records to the API server (Pusher), and the
// read-only HTTP API of explorer.wasmkube.io/v1alpha1 (Handler), which the API server
// mounts behind its authentication. docs/explorer.md says why it is shaped so.
package explorer

import (
	"sync"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// DefaultSize is how many records a ring keeps unless configured.
const DefaultSize = 10000

// Ring holds the last Size records, oldest first. Each appended record gets the next ID
// (1, 2, ...). Records are shared with readers once appended: never modify one.
type Ring struct {
	mu      sync.Mutex
	buf     []explorerv1.Record
	start   int    // index of the oldest record in buf
	n       int    // records held
	last    uint64 // ID of the newest record (0: none yet)
	changed chan struct{}
}

// NewRing returns a ring of size records (DefaultSize when size <= 0).
func NewRing(size int) *Ring {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring{buf: make([]explorerv1.Record, size), changed: make(chan struct{})}
}

// Size is how many records the ring keeps.
func (r *Ring) Size() int { return len(r.buf) }

// Append adds records, giving each the next ID, and wakes the watchers.
func (r *Ring) Append(recs ...explorerv1.Record) {
	if len(recs) == 0 {
		return
	}
	r.mu.Lock()
	for _, rec := range recs {
		r.last++
		rec.ID = r.last
		if r.n < len(r.buf) {
			r.buf[(r.start+r.n)%len(r.buf)] = rec
			r.n++
		} else {
			r.buf[r.start] = rec
			r.start = (r.start + 1) % len(r.buf)
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Since returns the records whose ID is greater than after, oldest first, the newest ID,
// and a channel closed at the next Append (to wait for more). gone is true when records
// after `after` have already been overwritten: the caller missed some and must start
// over, as a watch from a compacted resourceVersion does.
func (r *Ring) Since(after uint64) (recs []explorerv1.Record, last uint64, changed <-chan struct{}, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	oldest := r.last - uint64(r.n) + 1 // ID of buf[start] when n > 0
	if after > r.last {
		after = r.last
	}
	if r.n > 0 && after+1 < oldest {
		return nil, r.last, r.changed, true
	}
	skip := 0
	if r.n > 0 {
		skip = int(after + 1 - oldest)
	}
	recs = make([]explorerv1.Record, 0, r.n-skip)
	for i := skip; i < r.n; i++ {
		recs = append(recs, r.buf[(r.start+i)%len(r.buf)])
	}
	return recs, r.last, r.changed, false
}

// All returns every record the ring holds, oldest first, and the newest ID.
func (r *Ring) All() ([]explorerv1.Record, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]explorerv1.Record, r.n)
	for i := range r.n {
		out[i] = r.buf[(r.start+i)%len(r.buf)]
	}
	return out, r.last
}

// Len is how many records the ring holds now.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
