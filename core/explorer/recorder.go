package explorer

import (
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// Builder makes a record from what a component copied on its hot path. It runs on the
// recorder's goroutine, so the expensive part of recording (sorting a node matrix,
// formatting messages) is off the decision's path.
type Builder func() explorerv1.Record

// Recorder hands builders to one goroutine that builds the records and appends them to
// a ring. Record never blocks: when the queue is full (the builder goroutine is behind)
// the record is dropped and counted, because a decision must never wait for its record.
// A nil *Recorder records nothing, so components call it unconditionally.
type Recorder struct {
	ring      *Ring
	component string
	source    string
	queue     chan Builder
	dropped   atomic.Uint64
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// QueueLength is how many records may wait for the builder goroutine.
const QueueLength = 4096

// NewRecorder starts a recorder that stamps records with component and source (the
// component instance: scheduler name, API server identity, node name) and appends them
// to ring. Close stops it.
func NewRecorder(ring *Ring, component, source string) *Recorder {
	r := &Recorder{ring: ring, component: component, source: source, queue: make(chan Builder, QueueLength), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run()
	return r
}

// Ring is where the recorder appends (nil for a nil recorder).
func (r *Recorder) Ring() *Ring {
	if r == nil {
		return nil
	}
	return r.ring
}

// Record queues b, or drops it when the queue is full.
func (r *Recorder) Record(b Builder) {
	if r == nil {
		return
	}
	select {
	case r.queue <- b:
	default:
		r.dropped.Add(1)
	}
}

// Dropped is how many records were dropped because the queue was full.
func (r *Recorder) Dropped() uint64 {
	if r == nil {
		return 0
	}
	return r.dropped.Load()
}

// Close stops the goroutine once the records queued so far are in the ring. Records
// after Close are dropped (never a panic: a component may still be deciding).
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.closeOnce.Do(func() { close(r.stop) })
	<-r.done
}

func (r *Recorder) run() {
	defer close(r.done)
	batch := make([]explorerv1.Record, 0, 64)
	for {
		var b Builder
		select {
		case b = <-r.queue:
		case <-r.stop:
			// Drain what was queued before Close.
			for {
				select {
				case b := <-r.queue:
					r.ring.Append(r.build(b))
				default:
					return
				}
			}
		}
		batch = append(batch[:0], r.build(b))
		// Take what else is waiting, so that the ring's lock is taken once per batch.
	more:
		for len(batch) < cap(batch) {
			select {
			case b := <-r.queue:
				batch = append(batch, r.build(b))
			default:
				break more
			}
		}
		r.ring.Append(batch...)
		clear(batch)
	}
}

func (r *Recorder) build(b Builder) explorerv1.Record {
	rec := b()
	if rec.Component == "" {
		rec.Component = r.component
	}
	if rec.Source == "" {
		rec.Source = r.source
	}
	if rec.Time.IsZero() {
		rec.Time = metav1.NewMicroTime(time.Now())
	}
	return rec
}
