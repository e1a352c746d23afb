// Package nodecred is the kubelet's side of node credentials (docs/security.md): join a
// cluster with its join token, keep the credential in the kubelet's root dir so a restart
// does not join again, and renew it before it expires.
package nodecred

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// Credential is a node's bearer credential as the server issued it.
type Credential struct {
	Server   string    `json:"server"`
	NodeName string    `json:"nodeName"`
	Token    string    `json:"token"`
	CACert   string    `json:"caCert"`
	Issued   time.Time `json:"issued"`
	Expires  time.Time `json:"expires"`
	// NetworkPolicyToken is the node's NetworkPolicy enforcer's credential, issued and
	// renewed with Token (empty in a credential saved before the enforcer had its own).
	NetworkPolicyToken string `json:"networkPolicyToken,omitempty"`
}

// RenewAt is when the credential is renewed: two thirds into its lifetime.
func (c Credential) RenewAt() time.Time { return c.Issued.Add(c.Expires.Sub(c.Issued) * 2 / 3) }

// Valid reports whether c is for server and node and has not expired at now.
func (c Credential) Valid(server, node string, now time.Time) bool {
	return c.Token != "" && c.Server == server && c.NodeName == node && now.Before(c.Expires)
}

// StatusError is a refusal by the server (its HTTP code and message).
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Join exchanges a join token (K10<sha256 of the CA>::<secret>) for nodeName's
// credential, trusting the server only if its CA matches the hash in the token. A name
// that already has a valid credential is refused with a 409 StatusError.
func Join(ctx context.Context, server, joinToken, nodeName string) (Credential, error) {
	hash, secret, ok := strings.Cut(strings.TrimPrefix(joinToken, "K10"), "::")
	if !ok || !strings.HasPrefix(joinToken, "K10") || len(hash) != 64 || secret == "" {
		return Credential{}, errors.New("--token: want K10<sha256 hex of the CA>::<secret>")
	}
	body, _ := json.Marshal(map[string]string{"nodeName": nodeName})
	// The server's certificate is checked against the CA in the answer, whose hash the
	// token pins; the TLS layer cannot know that CA yet.
	c, err := post(ctx, &tls.Config{InsecureSkipVerify: true}, server, "/wasmkube/v1/join", secret, body)
	if err != nil {
		return Credential{}, fmt.Errorf("join %s as node %s: %w", server, nodeName, err)
	}
	sum := sha256.Sum256([]byte(c.CACert))
	if hex.EncodeToString(sum[:]) != strings.ToLower(hash) {
		return Credential{}, fmt.Errorf("join %s: the server's CA does not match the token's hash: refusing to trust it", server)
	}
	c.Server, c.NodeName = server, nodeName
	return c, nil
}

// Renew exchanges c for the node's next credential (c stays valid for a short while).
func Renew(ctx context.Context, c Credential) (Credential, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CACert)) {
		return Credential{}, errors.New("renew: the stored CA certificate is not PEM")
	}
	next, err := post(ctx, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, c.Server, "/wasmkube/v1/renew", c.Token, nil)
	if err != nil {
		return Credential{}, fmt.Errorf("renew the credential of node %s at %s: %w", c.NodeName, c.Server, err)
	}
	next.Server, next.NodeName = c.Server, c.NodeName
	if next.CACert == "" {
		next.CACert = c.CACert
	}
	return next, nil
}

func post(ctx context.Context, tc *tls.Config, server, path, bearer string, body []byte) (Credential, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(server, "/")+path, bytes.NewReader(body))
	if err != nil {
		return Credential{}, fmt.Errorf("--server %q: %w", server, err)
	}
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Content-Type", "application/json")
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := hc.Do(req)
	if err != nil {
		return Credential{}, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		var st struct {
			Message string `json:"message"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return Credential{}, &StatusError{Code: resp.StatusCode, Message: msg}
	}
	var c Credential
	if err := json.Unmarshal(data, &c); err != nil || c.Token == "" || c.CACert == "" || !c.Expires.After(c.Issued) {
		return Credential{}, errors.New("malformed answer")
	}
	return c, nil
}

// Load reads a credential saved by Save.
func Load(path string) (Credential, error) {
	var c Credential
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Save writes c to path (mode 0600, through a rename so a crash leaves the old one).
func Save(path string, c Credential) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("save node credential: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save node credential: %w", err)
	}
	return nil
}

// Source holds the kubelet's current credential, renews it and hands it to clients.
type Source struct {
	path string
	log  *slog.Logger
	now  func() time.Time
	// rejoin, when set, gets a new credential after the current one expired (the kubelet
	// was down past its expiry): the name then has no valid credential, so a join works.
	rejoin func(ctx context.Context) (Credential, error)

	mu  sync.RWMutex
	cur Credential
}

// NewSource serves c, saving every renewed credential to path (when not empty).
func NewSource(c Credential, path string, rejoin func(context.Context) (Credential, error), log *slog.Logger) *Source {
	if log == nil {
		log = slog.Default()
	}
	return &Source{path: path, log: log, now: time.Now, rejoin: rejoin, cur: c}
}

// Current is the credential in use.
func (s *Source) Current() Credential {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cur
}

// RESTConfig is a client config whose requests carry the current token.
func (s *Source) RESTConfig() *rest.Config {
	c := s.Current()
	return &rest.Config{
		Host: c.Server, BearerToken: c.Token, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(c.CACert)},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return &tokenTransport{rt: rt, s: s} },
	}
}

// NetworkPolicyRESTConfig is the NetworkPolicy enforcer's client config: its requests
// carry the current credential's NetworkPolicyToken.
func (s *Source) NetworkPolicyRESTConfig() *rest.Config {
	c := s.Current()
	return &rest.Config{
		Host: c.Server, BearerToken: c.NetworkPolicyToken, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(c.CACert)},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { return &tokenTransport{rt: rt, s: s, agent: true} },
	}
}

type tokenTransport struct {
	rt    http.RoundTripper
	s     *Source
	agent bool // the NetworkPolicy enforcer's token, not the kubelet's
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	c := t.s.Current()
	tok := c.Token
	if t.agent {
		tok = c.NetworkPolicyToken
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	return t.rt.RoundTrip(req)
}

// RenewNow renews the credential once (a rejoin when it has expired) and saves it.
func (s *Source) RenewNow(ctx context.Context) error {
	cur := s.Current()
	var next Credential
	var err error
	if !s.now().Before(cur.Expires) && s.rejoin != nil {
		next, err = s.rejoin(ctx)
	} else {
		next, err = Renew(ctx, cur)
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cur = next
	s.mu.Unlock()
	if s.path != "" {
		if err := Save(s.path, next); err != nil {
			return err
		}
	}
	s.log.Info("node credential renewed", "node", next.NodeName, "expires", next.Expires)
	return nil
}

// Run renews the credential two thirds into its lifetime until ctx ends, retrying a
// failed renewal after 5 s, doubling up to a minute.
func (s *Source) Run(ctx context.Context) {
	retry := time.Duration(0)
	for {
		wait := s.Current().RenewAt().Sub(s.now())
		if retry > 0 {
			wait = retry
		}
		t := time.NewTimer(max(wait, 0))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := s.RenewNow(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			retry = min(max(2*retry, 5*time.Second), time.Minute)
			s.log.Error("node credential renewal failed", "err", err, "expires", s.Current().Expires, "retry", retry)
			continue
		}
		retry = 0
	}
}
