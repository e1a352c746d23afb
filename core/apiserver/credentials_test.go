package apiserver_test

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// credClient posts to the node credential endpoints the way a joining kubelet does (no
// CA yet: it checks the CA hash in the answer).
type credClient struct {
	t   *testing.T
	url string
}

func (c credClient) post(path, bearer, body string) (int, http.Header, []byte) {
	c.t.Helper()
	req, _ := http.NewRequest("POST", c.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bearer)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func joinSecret(t *testing.T, srv *apiservertest.Server) string {
	t.Helper()
	_, secret, _ := strings.Cut(strings.TrimSpace(readFile(t, filepath.Join(srv.DataDir, "join-token"))), "::")
	return secret
}

func decodeCred(t *testing.T, b []byte) apiserver.JoinResponse {
	t.Helper()
	var jr apiserver.JoinResponse
	if err := json.Unmarshal(b, &jr); err != nil || jr.Token == "" || !jr.Expires.After(jr.Issued) {
		t.Fatalf("credential answer %s: %v", b, err)
	}
	return jr
}

// TestJoinNodeNames: join validates the name as upstream validates Node names (a DNS-1123
// subdomain), refuses IP addresses, and names the field.
func TestJoinNodeNames(t *testing.T) {
	srv := apiservertest.Start(t)
	c, secret := credClient{t, srv.URL}, joinSecret(t, srv)
	for _, name := range []string{"..", "-a", "a-", "a_b", "1.2.3.4", "::1", "n1\n", "n1%0a", "N1", "a..b", "", strings.Repeat("a", 254)} {
		body, _ := json.Marshal(apiserver.JoinRequest{NodeName: name})
		code, _, b := c.post("/wasmkube/v1/join", secret, string(body))
		if code != 400 || !strings.Contains(string(b), "nodeName") {
			t.Errorf("join as %q: %d %s, want 400 naming nodeName", name, code, b)
		}
	}
	if code, _, b := c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1","extra":1}`); code != 400 {
		t.Errorf("unknown field: %d %s", code, b)
	}
	for _, name := range []string{"n1", "node-1.example.com", "1.2.3.4.example"} {
		body, _ := json.Marshal(apiserver.JoinRequest{NodeName: name})
		if code, _, b := c.post("/wasmkube/v1/join", secret, string(body)); code != 200 {
			t.Errorf("join as %q: %d %s", name, code, b)
		}
	}
	if _, err := srv.API.NodeRESTConfig("a_b"); err == nil {
		t.Error("NodeRESTConfig accepted a_b")
	}
}

// TestJoinDoesNotHandOutCredentials: a second join for a name gets 409 and no token; the
// kubelet renews with its token (the old one keeps working briefly); after an admin
// revokes the credential the old tokens fail and the name can join again.
func TestJoinDoesNotHandOutCredentials(t *testing.T) {
	srv := apiservertest.Start(t)
	c, secret := credClient{t, srv.URL}, joinSecret(t, srv)
	code, _, b := c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1"}`)
	if code != 200 {
		t.Fatalf("join: %d %s", code, b)
	}
	first := decodeCred(t, b)
	code, _, b = c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1"}`)
	if code != 409 || strings.Contains(string(b), first.Token) || !strings.Contains(string(b), "revoke") {
		t.Fatalf("second join: %d %s, want 409 without the token", code, b)
	}
	// The in-process path also refuses to be a way around it: NodeRESTConfig is admin-side.
	nodeClient := func(tok string) error {
		cfg := &rest.Config{Host: srv.URL, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: srv.API.CACertPEM()}}
		_, err := mustClient(t, cfg).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	if err := nodeClient(first.Token); err != nil {
		t.Fatalf("joined token: %v", err)
	}

	// Renew: a new token; the old one still passes (grace), and a retried renewal with
	// the old one gets the same new token, not a third.
	code, _, b = c.post("/wasmkube/v1/renew", first.Token, "")
	if code != 200 {
		t.Fatalf("renew: %d %s", code, b)
	}
	second := decodeCred(t, b)
	if second.Token == first.Token {
		t.Fatal("renew returned the same token")
	}
	if code, _, b = c.post("/wasmkube/v1/renew", first.Token, ""); code != 200 || decodeCred(t, b).Token != second.Token {
		t.Fatalf("retried renew: %d %s", code, b)
	}
	for _, tok := range []string{first.Token, second.Token} {
		if err := nodeClient(tok); err != nil {
			t.Fatalf("after renew: %v", err)
		}
	}
	if code, _, _ := c.post("/wasmkube/v1/renew", srv.Config.BearerToken, ""); code != 403 {
		t.Fatalf("admin renewing: %d, want 403 (not a node)", code)
	}

	// Revoke: not by a node, by the admin; then both tokens fail and n1 may join again.
	if code, _, _ := c.post("/wasmkube/v1/revoke", second.Token, `{"nodeName":"n1"}`); code != 403 {
		t.Fatalf("node revoking: %d", code)
	}
	if code, _, b := c.post("/wasmkube/v1/revoke", srv.Config.BearerToken, `{"nodeName":"n1"}`); code != 200 {
		t.Fatalf("revoke: %d %s", code, b)
	}
	if code, _, _ := c.post("/wasmkube/v1/revoke", srv.Config.BearerToken, `{"nodeName":"n1"}`); code != 404 {
		t.Fatalf("second revoke: %d", code)
	}
	for _, tok := range []string{first.Token, second.Token} {
		if err := nodeClient(tok); !apierrors.IsUnauthorized(err) {
			t.Fatalf("revoked token: %v", err)
		}
	}
	if code, _, b := c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1"}`); code != 200 || decodeCred(t, b).Token == second.Token {
		t.Fatalf("join after revoke: %d %s", code, b)
	}
}

// TestAuthFailuresRateLimited: wrong join secrets and wrong bearer tokens from one address
// get 429 with Retry-After once over budget; a source over its join budget is refused
// even with the right secret, while valid bearer tokens keep working (components of the
// server itself share the loopback address with whoever is failing).
func TestAuthFailuresRateLimited(t *testing.T) {
	srv := apiservertest.Start(t)
	c, secret := credClient{t, srv.URL}, joinSecret(t, srv)
	got429 := func(path, tok string, n int) http.Header {
		for i := 0; i < n; i++ {
			code, h, b := c.post(path, tok, `{"nodeName":"n1"}`)
			switch code {
			case 401:
			case 429:
				var st metav1.Status
				if json.Unmarshal(b, &st) != nil || st.Code != 429 || h.Get("Retry-After") == "" {
					t.Fatalf("%s: 429 without Retry-After or Status: %v %s", path, h, b)
				}
				return h
			default:
				t.Fatalf("%s attempt %d: %d %s", path, i, code, b)
			}
		}
		t.Fatalf("%s: no 429 after %d failures", path, n)
		return nil
	}
	got429("/wasmkube/v1/join", "wrong", 20)
	if code, _, _ := c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1"}`); code != 429 {
		t.Fatalf("right secret from a blocked source: %d, want 429", code)
	}
	got429("/api/v1/namespaces", "wrong", 60)
	if _, err := srv.Client.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("valid token from the same address: %v", err)
	}
}

// TestNodeCredentialLegacyTokensFile: a tokens.json from before credentials expired is
// converted at start; its node tokens keep working (with a fresh expiry).
func TestNodeCredentialLegacyTokensFile(t *testing.T) {
	dir := t.TempDir()
	srv := apiservertest.Start(t, apiservertest.WithDataDir(dir))
	tok := srv.NodeConfig(t, "n1").BearerToken
	srv.Stop()
	// Rewrite tokens.json in the form before credentials expired.
	path := filepath.Join(dir, "tokens.json")
	var tf map[string]any
	if err := json.Unmarshal([]byte(readFile(t, path)), &tf); err != nil {
		t.Fatal(err)
	}
	delete(tf, "nodeCredentials")
	tf["nodes"] = map[string]string{"old": "legacy-token-0123456789"}
	b, _ := json.Marshal(tf)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	srv = apiservertest.Start(t, apiservertest.WithDataDir(dir))
	cfg := &rest.Config{Host: srv.URL, BearerToken: "legacy-token-0123456789", TLSClientConfig: rest.TLSClientConfig{CAData: srv.API.CACertPEM()}}
	if _, err := mustClient(t, cfg).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("legacy node token after upgrade: %v", err)
	}
	cfg.BearerToken = tok
	if _, err := mustClient(t, cfg).CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("token dropped from the file still works: %v", err)
	}
	if !strings.Contains(readFile(t, path), `"nodeCredentials"`) || strings.Contains(readFile(t, path), `"nodes"`) {
		t.Fatalf("tokens.json not converted: %s", readFile(t, path))
	}
}
