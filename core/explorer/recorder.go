package explorer

import (
	"sync/atomic"
	"time"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// Builder makes a record from what a component copied on its decision's path. It runs
// when the record is first read (the page, the API, the scheduler's push), at most once,
// on the reader's goroutine, so the expensive part of recording (sorting a node matrix,
// formatting messages) is paid only for the records someone reads. A builder must
// capture only values nobody changes after Record (copies, immutable statuses), never a
// live object.
type Builder func() explorerv1.Record

// Recorder appends records to a ring as builders. Record costs a lock and one small
// allocation: nothing is built, formatted or encoded on the decision's path, and there is
// no goroutine to compete with the component for the CPU. A nil *Recorder records
// nothing, so components call it unconditionally.
type Recorder struct {
	ring      *Ring
	component string
	source    string
	closed    atomic.Bool
}

// NewRecorder returns a recorder that stamps records with component and source (the
// component instance: scheduler name, API server identity, node name) and appends them
// to ring.
func NewRecorder(ring *Ring, component, source string) *Recorder {
	return &Recorder{ring: ring, component: component, source: source}
}

// Ring is where the recorder appends (nil for a nil recorder).
func (r *Recorder) Ring() *Ring {
	if r == nil {
		return nil
	}
	return r.ring
}

// Record appends the record b builds when read. The record's time, unless b sets one,
// is now.
func (r *Recorder) Record(b Builder) {
	r.RecordOr(b, nil)
}

// RecordOr is Record with a cheaper form of the record: a reader that is behind (the
// scheduler's push under load, Ring.SinceSummarized) builds summary instead of full
// and marks the record Summarized. summary nil: there is no cheaper form.
func (r *Recorder) RecordOr(full, summary Builder) {
	if r == nil || r.closed.Load() {
		return
	}
	r.ring.appendEntry(&entry{full: full, summary: summary, rec: r, at: time.Now()})
}

// WantWhole tells a component whether to copy what this decision's whole record needs,
// or only its summary (Ring.WantWhole); false for a nil recorder.
func (r *Recorder) WantWhole() bool { return r != nil && r.ring.WantWhole() }

// Close stops recording: records after Close are dropped (never a panic: a component
// may still be deciding). The records held stay readable.
func (r *Recorder) Close() {
	if r != nil {
		r.closed.Store(true)
	}
}
