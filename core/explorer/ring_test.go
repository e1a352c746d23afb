package explorer

import (
	"sync"
	"sync/atomic"
	"testing"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

func swap(policy string) explorerv1.Record {
	return explorerv1.Record{Type: explorerv1.TypeSwap, Component: explorerv1.ComponentScheduler, Swap: &explorerv1.Swap{Policy: policy, Result: explorerv1.SwapApplied}}
}

// TestRingBounded: the ring keeps the last Size records with growing IDs, and a reader
// that asks for records it overwrote is told so (gone) instead of getting a gap.
func TestRingBounded(t *testing.T) {
	r := NewRing(3)
	for i := 0; i < 10; i++ {
		r.Append(swap(string(rune('a' + i))))
	}
	if r.Len() != 3 {
		t.Fatalf("ring of 3 holds %d records after 10 appends", r.Len())
	}
	recs, last, _, gone := r.Since(7)
	if gone || last != 10 || len(recs) != 3 {
		t.Fatalf("Since(7) = %d records, last %d, gone %v; want 8, 9, 10", len(recs), last, gone)
	}
	for i, want := range []uint64{8, 9, 10} {
		if recs[i].ID != want || recs[i].Swap.Policy != string(rune('a'+want-1)) {
			t.Errorf("record %d: ID %d policy %q, want ID %d", i, recs[i].ID, recs[i].Swap.Policy, want)
		}
	}
	if _, _, _, gone := r.Since(6); !gone {
		t.Errorf("Since(6): record 7 was overwritten: want gone")
	}
	if recs, _, _, gone := r.Since(10); gone || len(recs) != 0 {
		t.Errorf("Since(newest) = %d records, gone %v; want none", len(recs), gone)
	}
	if NewRing(0).Size() != DefaultSize {
		t.Errorf("NewRing(0).Size() = %d, want the default %d", NewRing(0).Size(), DefaultSize)
	}
}

// TestRecorderBuildsWhenRead: Record builds nothing; a record is built the first time it
// is read, once, whatever the number of readers, and stamped with the recorder's source
// and the time of Record; after Close nothing is recorded.
func TestRecorderBuildsWhenRead(t *testing.T) {
	ring := NewRing(5)
	rec := NewRecorder(ring, explorerv1.ComponentAPIServer, "apiserver-1")
	var built atomic.Int32
	for range 20 {
		rec.Record(func() explorerv1.Record { built.Add(1); return swap("p") })
	}
	if n := built.Load(); n != 0 {
		t.Fatalf("%d records built before anyone read them", n)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); ring.All() }()
	}
	wg.Wait()
	recs, last := ring.All()
	if n := built.Load(); n != 5 {
		t.Fatalf("%d builds for the 5 records held, read 5 times: want each built once (the 15 overwritten never)", n)
	}
	if last != 20 || len(recs) != 5 || recs[0].ID != 16 || recs[0].Component != explorerv1.ComponentScheduler || recs[0].Source != "apiserver-1" || recs[0].Time.IsZero() {
		t.Fatalf("records %+v (last %d): want IDs 16-20, keeping their component, stamped with the recorder's source and a time", recs, last)
	}
	rec.Close()
	rec.Record(func() explorerv1.Record { return swap("late") })
	if _, last := ring.All(); last != 20 {
		t.Errorf("a record after Close was kept (last ID %d)", last)
	}
	var nilRec *Recorder
	nilRec.Record(func() explorerv1.Record { t.Fatal("a nil recorder built a record"); return explorerv1.Record{} })
}

// TestBehindSummarizesAndCountsLost: a reader that must see every record gets the newest
// `full` whole and the older ones as summaries when their component gave one (marked
// Summarized), records without a summary whole, and from the oldest held, with the
// number lost, when the ring overwrote some.
func TestBehindSummarizesAndCountsLost(t *testing.T) {
	ring := NewRing(8)
	rec := NewRecorder(ring, explorerv1.ComponentScheduler, "s")
	whole := func() explorerv1.Record { return swap("whole") }
	short := func() explorerv1.Record { return swap("summary") }
	for i := range 6 {
		if i == 1 {
			rec.Record(whole) // no cheaper form
			continue
		}
		rec.RecordOr(whole, short)
	}
	recs, last, lost, summarized := ring.Behind(0, 2)
	if last != 6 || lost != 0 || len(recs) != 6 || summarized != 3 {
		t.Fatalf("Behind(0, 2): %d records, last %d, lost %d, %d summarized; want 6, 6, 0, 3", len(recs), last, lost, summarized)
	}
	for i, r := range recs {
		wantSummary := i < 4 && i != 1
		if r.Summarized != wantSummary || (r.Swap.Policy == "summary") != wantSummary {
			t.Errorf("record %d: summarized %v policy %q, want summarized %v", r.ID, r.Summarized, r.Swap.Policy, wantSummary)
		}
	}
	for range 10 {
		rec.RecordOr(whole, short)
	}
	recs, last, lost, _ = ring.Behind(6, 100)
	if last != 16 || lost != 2 || len(recs) != 8 || recs[0].ID != 9 || recs[0].Summarized {
		t.Fatalf("Behind(6) after 10 more in a ring of 8: %d records from %d, last %d, lost %d; want 8 whole from 9, 16, lost 2", len(recs), recs[0].ID, last, lost)
	}
}
