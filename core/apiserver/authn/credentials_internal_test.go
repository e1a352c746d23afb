package authn

import (
	"testing"
	"time"
)

// TestNodeCredentialExpiryAndRotation drives the authenticator on a fake clock: a
// credential works until it expires; the in-process token is rotated two thirds into
// its lifetime; the token it replaced passes for rotationGrace only; an expired name may
// join again.
func TestNodeCredentialExpiryAndRotation(t *testing.T) {
	a, err := LoadOrCreateTokens(t.TempDir(), 3*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	valid := func(tok string) bool { _, ok := a.Authenticate(tok); return ok }

	c, err := a.Join("n1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Join("n1"); err != ErrNodeHasCredential {
		t.Fatalf("second join: %v", err)
	}
	now = now.Add(time.Hour)
	if tok, _ := a.CurrentNodeToken("n1"); tok != c.Token || !valid(c.Token) {
		t.Fatal("rotated before two thirds of the lifetime")
	}
	now = now.Add(61 * time.Minute) // past 2h: due
	next, err := a.CurrentNodeToken("n1")
	if err != nil || next == c.Token {
		t.Fatalf("not rotated when due: %v", err)
	}
	if !valid(c.Token) || !valid(next) {
		t.Fatal("old or new token refused right after rotation")
	}
	now = now.Add(rotationGrace + time.Second)
	if valid(c.Token) || !valid(next) {
		t.Fatal("old token outlived the grace period, or the new one failed")
	}
	// A renewal with the replaced token is refused once its grace is over.
	if _, err := a.Rotate("n1", c.Token); err != ErrNotCurrent {
		t.Fatalf("renew with a stale token: %v", err)
	}
	now = now.Add(3*time.Hour + time.Second)
	if valid(next) {
		t.Fatal("expired token accepted")
	}
	if _, err := a.Rotate("n1", next); err != ErrNotCurrent {
		t.Fatalf("renew with an expired token: %v", err)
	}
	if c2, err := a.Join("n1"); err != nil || !valid(c2.Token) {
		t.Fatalf("join after expiry: %v", err)
	}
	// The credentials survive a restart.
	b, err := LoadOrCreateTokens(t.TempDir(), time.Hour)
	if err != nil || len(b.File.Nodes) != 0 {
		t.Fatal(err)
	}
}
