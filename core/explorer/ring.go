// Package explorer keeps a component's decision records and serves them: a bounded ring
// (Ring) of records built when they are read (Recorder), the push of a scheduler's
// records to the API server (Push), and the read-only HTTP API of
// explorer.wasmkube.io/v1alpha1 (Handler), which the API server mounts behind its
// authentication. docs/explorer.md says why it is shaped so.
package explorer

import (
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// DefaultSize is how many records a ring keeps unless configured.
const DefaultSize = 10000

// Ring holds the last Size records, oldest first. Each appended record gets the next ID
// (1, 2, ...). A record may be appended as a builder (Recorder.Record), in which case it
// is built the first time a reader asks for it, once. Records are shared with readers
// once built: never modify one.
type Ring struct {
	mu      sync.Mutex
	buf     []*entry
	start   int    // index of the oldest record in buf
	n       int    // records held
	last    uint64 // ID of the newest record (0: none yet)
	changed chan struct{}
	// wholeEvery is set by the ring's reader that must see every record (the push): 1 in
	// wholeEvery decisions should keep what its whole record needs (WantWhole); 0 or 1:
	// all of them. decisions counts the questions.
	wholeEvery atomic.Int64
	decisions  atomic.Uint64
}

// WantWhole tells a component whether to copy what this decision's whole record needs
// (an attempt's node matrix) or only its summary: under load (SetWholeEvery) one decision
// in N is recorded whole.
func (r *Ring) WantWhole() bool {
	e := r.wholeEvery.Load()
	return e <= 1 || r.decisions.Add(1)%uint64(e) == 0
}

// SetWholeEvery makes WantWhole say yes once in every n decisions (n <= 1: always).
func (r *Ring) SetWholeEvery(n int64) { r.wholeEvery.Store(n) }

// entry is one record of the ring: built (rec) or still to build (full, and summary
// for a reader that is behind).
type entry struct {
	once          sync.Once
	full, summary Builder
	rec           *Recorder // stamps component and source; nil for a built record
	at            time.Time // when Record was called
	r             explorerv1.Record
}

// get builds the entry's record the first time (the summary when summarize and the
// entry has one), and returns it.
func (e *entry) get(summarize bool) explorerv1.Record {
	e.once.Do(func() {
		if e.full == nil {
			return // appended built
		}
		id := e.r.ID
		b := e.full
		if summarize && e.summary != nil {
			b = e.summary
		}
		e.r = b()
		e.r.ID = id
		if summarize && e.summary != nil {
			e.r.Summarized = true
		}
		if e.r.Component == "" {
			e.r.Component = e.rec.component
		}
		if e.r.Source == "" {
			e.r.Source = e.rec.source
		}
		if e.r.Time.IsZero() {
			e.r.Time = metav1.NewMicroTime(e.at)
		}
		e.full, e.summary, e.rec = nil, nil, nil // what the builders captured is garbage now
	})
	return e.r
}

// NewRing returns a ring of size records (DefaultSize when size <= 0).
func NewRing(size int) *Ring {
	if size <= 0 {
		size = DefaultSize
	}
	return &Ring{buf: make([]*entry, size)}
}

// Size is how many records the ring keeps.
func (r *Ring) Size() int { return len(r.buf) }

// Append adds built records, giving each the next ID, and wakes the watchers.
func (r *Ring) Append(recs ...explorerv1.Record) {
	if len(recs) == 0 {
		return
	}
	es := make([]entry, len(recs))
	r.mu.Lock()
	for i := range recs {
		e := &es[i]
		e.r = recs[i]
		r.put(e)
	}
	r.wake()
	r.mu.Unlock()
}

// appendEntry adds one record still to build.
func (r *Ring) appendEntry(e *entry) {
	r.mu.Lock()
	r.put(e)
	r.wake()
	r.mu.Unlock()
}

// put gives e the next ID and stores it, over the oldest when full. r.mu is held.
func (r *Ring) put(e *entry) {
	r.last++
	e.r.ID = r.last
	if r.n < len(r.buf) {
		r.buf[(r.start+r.n)%len(r.buf)] = e
		r.n++
	} else {
		r.buf[r.start] = e
		r.start = (r.start + 1) % len(r.buf)
	}
}

// wake closes the channel the watchers wait on, if one waits. r.mu is held. The channel
// is made only when a reader asks for it (Since), so that an append with nobody
// watching costs no allocation.
func (r *Ring) wake() {
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
}

// Since returns the records whose ID is greater than after, oldest first, the newest ID,
// and a channel closed at the next Append (to wait for more). gone is true when records
// after `after` have already been overwritten: the caller missed some and must start
// over, as a watch from a compacted resourceVersion does.
func (r *Ring) Since(after uint64) (recs []explorerv1.Record, last uint64, changed <-chan struct{}, gone bool) {
	es, last, changed, gone := r.since(after)
	return build(es, 0), last, changed, gone
}

// Behind is what a reader that must see every record (the scheduler's push) reads: the
// records after `after`, from the oldest the ring holds when some were overwritten (lost
// counts those), oldest first, and the newest ID. Of the records not built yet, all but
// the newest full are built as summaries when their component gave one (an attempt
// without its node matrix), marked Summarized; summarized counts the summaries returned
// (also those recorded as summaries only, see WantWhole). A reader that
// keeps up (fewer than full new records each time) gets every record whole.
func (r *Ring) Behind(after uint64, full int) (recs []explorerv1.Record, last, lost uint64, summarized int) {
	r.mu.Lock()
	oldest := r.last - uint64(r.n) + 1
	if r.n > 0 && after+1 < oldest {
		lost = oldest - after - 1
		after = oldest - 1
	}
	es, last, _ := r.sinceLocked(after)
	r.mu.Unlock()
	cut := max(0, len(es)-full)
	recs = build(es, cut)
	for _, rec := range recs {
		if rec.Summarized {
			summarized++
		}
	}
	return recs, last, lost, summarized
}

func (r *Ring) since(after uint64) (es []*entry, last uint64, changed <-chan struct{}, gone bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	es, last, gone = r.sinceLocked(after)
	return es, last, r.changed, gone
}

// sinceLocked is since with r.mu held, without the watchers' channel.
func (r *Ring) sinceLocked(after uint64) (es []*entry, last uint64, gone bool) {
	oldest := r.last - uint64(r.n) + 1 // ID of buf[start] when n > 0
	if after > r.last {
		after = r.last
	}
	if r.n > 0 && after+1 < oldest {
		return nil, r.last, true
	}
	skip := 0
	if r.n > 0 {
		skip = int(after + 1 - oldest)
	}
	es = make([]*entry, 0, r.n-skip)
	for i := skip; i < r.n; i++ {
		es = append(es, r.buf[(r.start+i)%len(r.buf)])
	}
	return es, r.last, false
}

// build builds entries outside the ring's lock (a record is built once, by whichever
// reader comes first); the first summarize ones as summaries when not built yet.
func build(es []*entry, summarize int) []explorerv1.Record {
	out := make([]explorerv1.Record, len(es))
	for i, e := range es {
		out[i] = e.get(i < summarize)
	}
	return out
}

// All returns every record the ring holds, oldest first, and the newest ID.
func (r *Ring) All() ([]explorerv1.Record, uint64) {
	r.mu.Lock()
	es := make([]*entry, r.n)
	for i := range r.n {
		es[i] = r.buf[(r.start+i)%len(r.buf)]
	}
	last := r.last
	r.mu.Unlock()
	return build(es, 0), last
}

// Len is how many records the ring holds now.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
