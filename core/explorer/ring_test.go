package explorer

import (
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

// TestRecorderBuildsOffThePath: Record never blocks; records are built and stamped on
// the recorder's goroutine; what does not fit the queue is counted, not waited for.
func TestRecorderBuildsOffThePath(t *testing.T) {
	ring := NewRing(5)
	rec := NewRecorder(ring, explorerv1.ComponentAPIServer, "apiserver-1")
	for i := 0; i < 20; i++ {
		rec.Record(func() explorerv1.Record { return swap("p") })
	}
	rec.Close()
	recs, last := ring.All()
	if int(last)+int(rec.Dropped()) != 20 {
		t.Fatalf("%d recorded + %d dropped, want 20", last, rec.Dropped())
	}
	if len(recs) != 5 || recs[0].Component != explorerv1.ComponentScheduler || recs[0].Source != "apiserver-1" || recs[0].Time.IsZero() {
		t.Fatalf("records %+v: want 5, keeping their component, stamped with the recorder's source and a time", recs)
	}
	var nilRec *Recorder
	nilRec.Record(func() explorerv1.Record { t.Fatal("a nil recorder built a record"); return explorerv1.Record{} })
}
