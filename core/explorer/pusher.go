package explorer

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// PushInterval is how often a Pusher sends what its ring gained.
const PushInterval = 500 * time.Millisecond

// pushBatch bounds one POST, so that a backlog after an outage is sent in pieces.
const pushBatch = 500

// PushCPU is the share of one core a Pusher spends building and encoding whole records:
// 1% of the time since its last push. The newest records are sent whole as long as their
// estimated cost (measured on the previous pushes) fits; older ones are sent as summaries
// (an attempt that scheduled without its node matrix; every attempt that did not schedule
// is whole). A scheduler that decides fewer pods than the budget pays for (a few hundred a
// second with 100-row matrices) sends every record whole; above, building and encoding
// every matrix would cost more CPU than the decisions do (docs/explorer.md).
const PushCPU = 0.01

// PushStats counts what Push did, for the component's metrics.
type PushStats struct {
	// Sent records (whole or summarized), Summarized of them, and Lost: overwritten in the
	// ring before they could be sent (each record after such a gap says how many in
	// DroppedBefore).
	Sent, Summarized, Lost atomic.Uint64
	// BuildNanos is the time spent building and encoding the records sent.
	BuildNanos atomic.Uint64
}

// Push sends the records that ring gains to the API server (POST records), every
// PushInterval, until ctx ends: NewPusher(...).Run(ctx). stats may be nil.
func Push(ctx context.Context, client rest.Interface, ring *Ring, log *slog.Logger, stats *PushStats) {
	NewPusher(client, ring, log, stats).Run(ctx)
}

// Run flushes every PushInterval until ctx ends. It is how the scheduler's records reach
// the API server (docs/explorer.md says why push). A Pusher run again (a new leadership
// term) goes on where it stopped.
func (p *Pusher) Run(ctx context.Context) {
	t := time.NewTicker(PushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.Flush(ctx)
	}
}

// Pusher sends a ring's new records to the API server. A record the server refused or
// could not take is not sent again: records are a view of recent decisions, and the next
// ones will come; a backlog larger than the ring is lost the same way (the ring
// overwrote it), and counted.
type Pusher struct {
	mu      sync.Mutex // one Flush at a time
	client  rest.Interface
	ring    *Ring
	log     *slog.Logger
	stats   *PushStats
	sent    uint64
	failing bool
	// last is when the previous Flush ended; perWhole the estimated time to build and
	// encode one whole record (initialPerWhole until measured).
	last     time.Time
	perWhole time.Duration
}

// initialPerWhole is the cost assumed for a whole record before the first measure: that
// of an attempt with a 100-row matrix (about 62 KB of JSON) on a loaded machine.
const initialPerWhole = 200 * time.Microsecond

// NewPusher returns a pusher that starts after the newest record ring holds (make it
// before the component decides, so that it sends every record). stats may be nil.
func NewPusher(client rest.Interface, ring *Ring, log *slog.Logger, stats *PushStats) *Pusher {
	if log == nil {
		log = slog.Default()
	}
	if stats == nil {
		stats = &PushStats{}
	}
	_, sent, _, _ := ring.Since(^uint64(0))
	return &Pusher{client: client, ring: ring, log: log, stats: stats, sent: sent, last: time.Now(), perWhole: initialPerWhole}
}

// wholeBudget is how many of the new records to build whole: as many as PushCPU of the
// time since the last flush pays for at the measured cost per whole record.
func wholeBudget(since, perWhole time.Duration) int {
	if perWhole <= 0 {
		return math.MaxInt
	}
	return int(time.Duration(float64(since)*PushCPU) / perWhole)
}

// Flush sends the records the ring gained since the last Flush: the newest whole, as many
// as PushCPU pays for, the older ones as summaries.
func (p *Pusher) Flush(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	start := time.Now()
	whole := wholeBudget(start.Sub(p.last), p.perWhole)
	recs, last, lost, summarized := p.ring.Behind(p.sent, whole)
	if lost > 0 && len(recs) > 0 {
		recs[0].DroppedBefore = lost // recs holds copies: the ring's record is not changed
	}
	p.stats.Lost.Add(lost)
	p.stats.Summarized.Add(uint64(summarized))
	p.stats.Sent.Add(uint64(len(recs)))
	cost := time.Since(start)
	// Sample at the source: when the budget pays for fewer whole records than arrived, the
	// component copies a whole record's data for one decision in every, and a summary for
	// the others, so that it does not copy matrices nobody will send.
	every := int64(1)
	if len(recs) > whole {
		every = int64((len(recs) + max(whole, 1) - 1) / max(whole, 1))
	}
	p.ring.SetWholeEvery(every)
	whole = len(recs) - summarized
	for len(recs) > 0 {
		n := min(len(recs), pushBatch)
		t := time.Now()
		body, err := json.Marshal(&explorerv1.RecordList{TypeMeta: metav1.TypeMeta{Kind: "RecordList", APIVersion: explorerv1.APIVersion}, Items: recs[:n]})
		cost += time.Since(t)
		if err == nil {
			err = post(ctx, p.client, body)
		}
		if err != nil && ctx.Err() == nil {
			if !p.failing {
				p.log.Warn("explorer: push records to the API server", "records", n, "err", err)
			}
			p.failing = true
		} else {
			if p.failing {
				p.log.Info("explorer: pushing records to the API server again")
			}
			p.failing = false
		}
		recs = recs[n:]
	}
	p.stats.BuildNanos.Add(uint64(cost))
	// The cost of the summaries is counted as the whole records' own: the estimate errs
	// towards fewer whole records. Halfway to the new measure, so that one slow push (a
	// GC, a preempted thread) does not swing the next.
	if whole > 0 {
		m := cost / time.Duration(whole)
		if p.perWhole > 0 {
			m = (p.perWhole + m) / 2
		}
		p.perWhole = m
	}
	p.sent, p.last = last, time.Now()
}

func post(ctx context.Context, client rest.Interface, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return client.Post().AbsPath(explorerv1.PathPrefix, explorerv1.ResourceRecords).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
}
