package serviceaccount

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pki", "sa.key")
	iss, err := LoadOrCreate(path, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	now := time.Now()
	tok, err := iss.Sign(Claims{Namespace: "ns", ServiceAccount: Ref{Name: "app", UID: "u1"}, Pod: &Ref{Name: "p", UID: "u2"},
		Audiences: []string{"vault"}, IssuedAt: now, Expiry: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	// The payload is upstream's shape.
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	if m["sub"] != "system:serviceaccount:ns:app" || m["iss"] != DefaultIssuer {
		t.Fatalf("claims %v", m)
	}
	k8s := m["kubernetes.io"].(map[string]any)
	if k8s["namespace"] != "ns" || k8s["pod"].(map[string]any)["uid"] != "u2" || k8s["serviceaccount"].(map[string]any)["name"] != "app" {
		t.Fatalf("kubernetes.io claim %v", k8s)
	}

	// The same key file read again verifies it.
	again, err := LoadOrCreate(path, DefaultIssuer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := again.Verify(tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "ns" || c.ServiceAccount.UID != "u1" || c.Pod == nil || c.Pod.Name != "p" || len(c.Audiences) != 1 || c.ID == "" {
		t.Fatalf("claims %+v", c)
	}
	// Expired (past the leeway) is refused.
	if _, err := again.Verify(tok, now.Add(time.Hour+2*time.Minute)); err == nil || errors.Is(err, ErrNotOurs) {
		t.Fatalf("expired token: %v", err)
	}
	// Another issuer's key: refused.
	other, _ := LoadOrCreate(filepath.Join(dir, "other.key"), DefaultIssuer)
	if _, err := other.Verify(tok, now); err == nil {
		t.Fatal("token verified with another key")
	}
	// A tampered payload: refused.
	parts := strings.Split(tok, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(payload), `"ns"`, `"kube-system"`, -1)))
	if _, err := again.Verify(parts[0]+"."+forged+"."+parts[2], now); err == nil {
		t.Fatal("forged token verified")
	}
	// Not a JWT at all: ErrNotOurs, so other authenticators are tried.
	if _, err := again.Verify("abcdef0123", now); !errors.Is(err, ErrNotOurs) {
		t.Fatalf("opaque token: %v", err)
	}
	if got := Intersect([]string{"a", "b"}, []string{"b", "c"}); len(got) != 1 || got[0] != "b" {
		t.Fatalf("Intersect %v", got)
	}
}
