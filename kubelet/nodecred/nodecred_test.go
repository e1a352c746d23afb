package nodecred_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/nodecred"
)

func joinToken(t *testing.T, srv *apiservertest.Server) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(srv.DataDir, "join-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestJoinSaveRenew: a kubelet joins, saves its credential (a second join is refused),
// renews it on a short lifetime without its clients noticing, and the saved file is the
// renewed credential.
func TestJoinSaveRenew(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := apiservertest.Start(t, apiservertest.WithNodeCredentialTTL(6*time.Second))
	tok := joinToken(t, srv)
	if _, err := nodecred.Join(ctx, srv.URL, "K10"+strings.Repeat("0", 64)+"::x", "n1"); err == nil {
		t.Fatal("join with a wrong CA hash and secret succeeded")
	}
	c, err := nodecred.Join(ctx, srv.URL, tok, "n1")
	if err != nil {
		t.Fatal(err)
	}
	var se *nodecred.StatusError
	if _, err := nodecred.Join(ctx, srv.URL, tok, "n1"); !errors.As(err, &se) || se.Code != 409 {
		t.Fatalf("second join: %v, want 409", err)
	}
	path := filepath.Join(t.TempDir(), "node-credential.json")
	if err := nodecred.Save(path, c); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("saved credential mode: %v %v", fi.Mode(), err)
	}
	loaded, err := nodecred.Load(path)
	if err != nil || !loaded.Valid(srv.URL, "n1", time.Now()) || loaded.Valid(srv.URL, "n2", time.Now()) {
		t.Fatalf("loaded %+v: %v", loaded, err)
	}

	src := nodecred.NewSource(loaded, path, nil, nil)
	client, err := kubernetes.NewForConfig(src.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The NetworkPolicy enforcer's credential came with the join: it lists every pod,
	// which the node's may not (upstream's node authorizer).
	if c.NetworkPolicyToken == "" || loaded.NetworkPolicyToken != c.NetworkPolicyToken {
		t.Fatalf("no NetworkPolicy enforcer credential joined and saved: %q %q", c.NetworkPolicyToken, loaded.NetworkPolicyToken)
	}
	policyClient, err := kubernetes.NewForConfig(src.NetworkPolicyRESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := policyClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("enforcer lists every pod: %v", err)
	}
	if _, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Fatalf("node lists every pod: %v, want forbidden", err)
	}
	rctx, rcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { src.Run(rctx); close(done) }()
	defer func() { rcancel(); <-done }()
	// Past the first credential's expiry the client still works: Run renewed it.
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(c.Expires.Add(time.Second)) || src.Current().Token == c.Token {
		if time.Now().After(deadline) {
			t.Fatal("credential not renewed")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Fatalf("client after the first credential expired: %v", err)
	}
	if _, err := policyClient.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil || src.Current().NetworkPolicyToken == c.NetworkPolicyToken {
		t.Fatalf("enforcer's client after the first credential expired: %v (token renewed: %v)", err, src.Current().NetworkPolicyToken != c.NetworkPolicyToken)
	}
	saved, err := nodecred.Load(path)
	if err != nil || saved.Token == c.Token || !saved.Expires.After(c.Expires) {
		t.Fatalf("saved credential not the renewed one: %v", err)
	}
}

// TestRejoinAfterExpiry: a kubelet down past its credential's expiry joins again (the
// name has no valid credential then).
func TestRejoinAfterExpiry(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := apiservertest.Start(t, apiservertest.WithNodeCredentialTTL(2*time.Second))
	tok := joinToken(t, srv)
	c, err := nodecred.Join(ctx, srv.URL, tok, "n1")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(c.Expires) + 100*time.Millisecond)
	if _, err := nodecred.Renew(ctx, c); err == nil {
		t.Fatal("renewed an expired credential")
	}
	src := nodecred.NewSource(c, "", func(ctx context.Context) (nodecred.Credential, error) {
		return nodecred.Join(ctx, srv.URL, tok, "n1")
	}, nil)
	if err := src.RenewNow(ctx); err != nil || src.Current().Token == c.Token {
		t.Fatalf("rejoin: %v", err)
	}
}
