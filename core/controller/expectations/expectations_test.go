package expectations

import (
	"testing"
	"time"
)

func TestExpectations(t *testing.T) {
	now := time.Unix(1000, 0)
	e := New()
	e.now = func() time.Time { return now }

	if !e.Satisfied("a") {
		t.Fatal("unknown key must be satisfied")
	}
	e.ExpectCreations("a", 2)
	e.ExpectDeletions("a", []string{"u1"})
	if e.Satisfied("a") {
		t.Fatal("satisfied with work in flight")
	}
	e.CreationObserved("a")
	e.CreationObserved("a")
	e.CreationObserved("a") // an extra observation must not go negative and hide a later expectation
	if adds, dels := e.Pending("a"); adds != 0 || dels != 1 {
		t.Fatalf("pending = %d,%d, want 0,1", adds, dels)
	}
	e.DeletionObserved("a", "u1")
	e.DeletionObserved("a", "u1")
	if !e.Satisfied("a") {
		t.Fatal("not satisfied after all observed")
	}
	e.ExpectCreations("a", 1)
	if e.Satisfied("a") {
		t.Fatal("extra observation leaked into a later expectation")
	}
	now = now.Add(TTL + time.Second)
	if !e.Satisfied("a") {
		t.Fatal("expired expectations must not block the key")
	}
	e.Forget("a")
	if adds, dels := e.Pending("a"); adds != 0 || dels != 0 {
		t.Fatal("forget left state")
	}
}
