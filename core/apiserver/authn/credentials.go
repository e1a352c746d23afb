// Package authn is who the callers and the server are: the bearer tokens of the data dir
// (the admin token, the join secret, each node's rotating credential and its NetworkPolicy
// enforcer's), the in-memory tokens of the scheduler and controller manager, the static
// token file (--token-auth-file), the budget of failed secrets per source address, the
// cluster CA and serving certificate, and the sharing of all of them through etcd when
// several API servers serve one cluster. Service account tokens are
// core/apiserver/serviceaccount's; impersonation and authorization are the caller's.
package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// Well-known users and files of the tokens.
const (
	adminUser      = "wasmkube-admin"
	loopbackUser   = "system:apiserver"
	tokensFileName = "tokens.json"
)

// The NetworkPolicy enforcer's credential (core/apiserver/netpolcred.go).
const (
	NetworkPolicyAgentUserPrefix = "system:wasmkube:network-policy-agent:"
	NetworkPolicyAgentsGroup     = authz.NetworkPolicyAgentsGroup // RBAC binds it (authz/rbac.go)
)

// DefaultNodeCredentialTTL is how long a node credential is valid when
// Options.NodeCredentialTTL is zero. Kubelets renew at two thirds of it.
const DefaultNodeCredentialTTL = 24 * time.Hour

// rotationGrace is how long the credential a rotation replaced stays valid, so requests
// that were already on their way with it still pass (capped by its own expiry).
const rotationGrace = 2 * time.Minute

// tokenFile is the persisted form of every bearer token the server issued.
type tokenFile struct {
	Admin    string              `json:"admin"`
	Loopback string              `json:"loopback"`
	Join     string              `json:"joinSecret"`
	Nodes    map[string]NodeCred `json:"nodeCredentials"`
	// LegacyNodes is the form before node credentials expired (node -> token); it is
	// read once, converted into Nodes with a fresh expiry, and not written again.
	LegacyNodes map[string]string `json:"nodes,omitempty"`
}

// NodeCred is one node's bearer credential (user system:node:<name>).
type NodeCred struct {
	Token   string    `json:"token"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`
	// Previous is the token this one replaced, accepted until PreviousExpires.
	Previous        string    `json:"previous,omitempty"`
	PreviousExpires time.Time `json:"previousExpires,omitempty"`
	// Agent is the token of the node's NetworkPolicy enforcer (core/apiserver/netpolcred.go), issued,
	// rotated, revoked and expiring with Token; PreviousAgent goes with Previous.
	Agent         string `json:"agent,omitempty"`
	PreviousAgent string `json:"previousAgent,omitempty"`
}

// normalize converts the legacy node map and makes Nodes non-nil.
func (tf *tokenFile) normalize(now time.Time, ttl time.Duration) {
	if tf.Nodes == nil {
		tf.Nodes = map[string]NodeCred{}
	}
	for node, tok := range tf.LegacyNodes {
		if _, ok := tf.Nodes[node]; !ok {
			tf.Nodes[node] = NodeCred{Token: tok, Issued: now, Expires: now.Add(ttl)}
		}
	}
	tf.LegacyNodes = nil
}

func (tf tokenFile) clone() tokenFile {
	c := tf
	c.Nodes = make(map[string]NodeCred, len(tf.Nodes))
	for k, v := range tf.Nodes {
		c.Nodes[k] = v
	}
	return c
}

// tokenEntry is what a bearer token maps to; a zero expires never expires.
type tokenEntry struct {
	user    admission.UserInfo
	expires time.Time
}

// Authenticator maps bearer tokens to users. Tokens are looked up by their sha256 so the
// map lookup does not compare secrets byte by byte.
type Authenticator struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.RWMutex
	path   string
	File   tokenFile
	byHash map[[32]byte]tokenEntry
	// components are the in-memory tokens of the in-process scheduler and controller
	// manager (core/apiserver/components.go), by token hash and by user.
	components      map[[32]byte]admission.UserInfo
	componentTokens map[string]string

	// writeMu serialises changes to node credentials (which may wait on etcd) without
	// holding mu, so authentication never waits for etcd.
	writeMu sync.Mutex

	// shared is set on an external etcd: node credentials are changed there first and
	// re-read from there (on an unknown token, at most once per refreshInterval, and every
	// sharedResyncInterval so revocations reach every server).
	Shared      *SharedIdentity
	refreshMu   sync.Mutex
	lastRefresh time.Time
}

func LoadOrCreateTokens(dataDir string, ttl time.Duration) (*Authenticator, error) {
	if ttl <= 0 {
		ttl = DefaultNodeCredentialTTL
	}
	a := &Authenticator{path: filepath.Join(dataDir, tokensFileName), ttl: ttl, now: time.Now}
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		a.File = tokenFile{Admin: randomToken(24), Loopback: randomToken(24), Join: randomToken(16), Nodes: map[string]NodeCred{}}
		if err := a.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("read tokens: %w", err)
	default:
		if err := json.Unmarshal(b, &a.File); err != nil {
			return nil, fmt.Errorf("parse %s: %w", a.path, err)
		}
		if a.File.Admin == "" || a.File.Loopback == "" || a.File.Join == "" {
			return nil, fmt.Errorf("%s is missing a token; remove it to generate new ones", a.path)
		}
		legacy := len(a.File.LegacyNodes) > 0
		a.File.normalize(a.now(), ttl)
		if legacy {
			if err := a.saveLocked(); err != nil {
				return nil, err
			}
		}
	}
	a.rebuildLocked()
	return a, nil
}

func (a *Authenticator) saveLocked() error {
	b, err := json.MarshalIndent(a.File, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(a.path, b, 0o600)
}

func (a *Authenticator) rebuildLocked() {
	a.byHash = map[[32]byte]tokenEntry{
		sha256.Sum256([]byte(a.File.Admin)):    {user: admission.UserInfo{Name: adminUser, Groups: []string{authz.MastersGroup, authz.AuthenticatedGroup}}},
		sha256.Sum256([]byte(a.File.Loopback)): {user: admission.UserInfo{Name: loopbackUser, Groups: []string{authz.MastersGroup, authz.AuthenticatedGroup}}},
	}
	for node, c := range a.File.Nodes {
		u := admission.UserInfo{Name: admission.NodeUserPrefix + node, Groups: []string{admission.NodesGroup, authz.AuthenticatedGroup}}
		a.byHash[sha256.Sum256([]byte(c.Token))] = tokenEntry{user: u, expires: c.Expires}
		if c.Previous != "" {
			a.byHash[sha256.Sum256([]byte(c.Previous))] = tokenEntry{user: u, expires: c.PreviousExpires}
		}
		addAgentTokens(a.byHash, node, c)
	}
}

// lookup returns the user of a token that is known and not expired.
func (a *Authenticator) lookup(h [32]byte) (admission.UserInfo, bool) {
	a.mu.RLock()
	e, ok := a.byHash[h]
	if cu, isComponent := a.components[h]; isComponent {
		e, ok = tokenEntry{user: cu}, true
	}
	a.mu.RUnlock()
	if !ok || (!e.expires.IsZero() && !a.now().Before(e.expires)) {
		return admission.UserInfo{}, false
	}
	return e.user, true
}

// Authenticate returns the user of a bearer token.
func (a *Authenticator) Authenticate(token string) (admission.UserInfo, bool) {
	if token == "" {
		return admission.UserInfo{}, false
	}
	h := sha256.Sum256([]byte(token))
	if u, ok := a.lookup(h); ok || a.Shared == nil || !a.refresh(false) {
		return u, ok
	}
	return a.lookup(h)
}

// refresh replaces the node credentials with the ones in etcd (the truth when servers
// share one), at most once per refreshInterval unless force; it reports whether they
// changed.
func (a *Authenticator) refresh(force bool) bool {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	if !force && time.Since(a.lastRefresh) < refreshInterval {
		return false
	}
	a.lastRefresh = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tf, err := a.Shared.tokens(ctx)
	if err != nil {
		return false
	}
	tf.normalize(a.now(), a.ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	if equalNodes(a.File.Nodes, tf.Nodes) {
		return false
	}
	a.File.Nodes = tf.Nodes
	_ = a.saveLocked()
	a.rebuildLocked()
	return true
}

func equalNodes(x, y map[string]NodeCred) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok || v.Token != w.Token || !v.Expires.Equal(w.Expires) || v.Previous != w.Previous || !v.PreviousExpires.Equal(w.PreviousExpires) || v.Agent != w.Agent {
			return false
		}
	}
	return true
}

// Resync re-reads the shared credentials every interval until ctx ends, so a credential
// revoked or rotated through another server stops working here too.
func (a *Authenticator) Resync(ctx context.Context, interval time.Duration) {
	if a.Shared == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.refresh(true)
		}
	}
}

// update applies fn to the node credentials: in etcd first when servers share it (a
// compare-and-swap; fn may run more than once), then locally.
func (a *Authenticator) update(fn func(tf *tokenFile) error) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	var next tokenFile
	if a.Shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tf, err := a.Shared.updateTokens(ctx, func(tf *tokenFile) error {
			tf.normalize(a.now(), a.ttl)
			return fn(tf)
		})
		if err != nil {
			return err
		}
		a.mu.RLock()
		next = a.File.clone()
		a.mu.RUnlock()
		next.Nodes = tf.Nodes
	} else {
		a.mu.RLock()
		next = a.File.clone()
		a.mu.RUnlock()
		if err := fn(&next); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.File
	a.File = next
	if err := a.saveLocked(); err != nil {
		a.File = prev
		return err
	}
	a.rebuildLocked()
	return nil
}

func (a *Authenticator) newCred(now time.Time) NodeCred {
	return NodeCred{Token: randomToken(24), Agent: randomToken(24), Issued: now, Expires: now.Add(a.ttl)}
}

// ErrNodeHasCredential: a join for a node whose credential is still valid.
var ErrNodeHasCredential = errors.New("node already has a valid credential")

// Join issues a credential for a node that has none, or whose credential has expired.
// It never hands out a credential that exists: that one belongs to whoever joined first.
func (a *Authenticator) Join(node string) (NodeCred, error) {
	var out NodeCred
	err := a.update(func(tf *tokenFile) error {
		now := a.now()
		if c, ok := tf.Nodes[node]; ok && now.Before(c.Expires) {
			return ErrNodeHasCredential
		}
		out = a.newCred(now)
		tf.Nodes[node] = out
		return nil
	})
	return out, err
}

// ErrNotCurrent: a renewal with a token that is no longer the node's.
var ErrNotCurrent = errors.New("the credential is not the node's current one")

// Rotate replaces the node's credential presented as token with a new one; the old one
// stays valid for rotationGrace. A retried renewal (token is the one the last rotation
// replaced) gets the current credential again instead of a third one.
func (a *Authenticator) Rotate(node, token string) (NodeCred, error) {
	var out NodeCred
	err := a.update(func(tf *tokenFile) error {
		now := a.now()
		c, ok := tf.Nodes[node]
		switch {
		case ok && subtle.ConstantTimeCompare([]byte(c.Token), []byte(token)) == 1 && now.Before(c.Expires):
			next := a.newCred(now)
			next.Previous, next.PreviousExpires, next.PreviousAgent = c.Token, minTime(c.Expires, now.Add(rotationGrace)), c.Agent
			tf.Nodes[node] = next
			out = next
		case ok && c.Previous != "" && subtle.ConstantTimeCompare([]byte(c.Previous), []byte(token)) == 1 && now.Before(c.PreviousExpires):
			out = c
		default:
			return ErrNotCurrent
		}
		return nil
	})
	return out, err
}

// Revoke drops the node's credential; it reports whether there was one.
func (a *Authenticator) Revoke(node string) (bool, error) {
	found := false
	err := a.update(func(tf *tokenFile) error {
		_, found = tf.Nodes[node]
		delete(tf.Nodes, node)
		return nil
	})
	return found, err
}

// CurrentNodeToken is the token in-process components of this server use for node: the
// current one, rotated here once two thirds of its lifetime have passed (or issued when
// there is none). In-process callers already hold the admin's trust, so they, unlike a
// join, may be handed an existing credential.
func (a *Authenticator) CurrentNodeToken(node string) (string, error) {
	a.mu.RLock()
	c, ok := a.File.Nodes[node]
	a.mu.RUnlock()
	now := a.now()
	if ok && now.Before(renewAt(c)) {
		return c.Token, nil
	}
	var out string
	err := a.update(func(tf *tokenFile) error {
		c, ok := tf.Nodes[node]
		if ok && now.Before(renewAt(c)) {
			out = c.Token // another caller rotated it meanwhile
			return nil
		}
		next := a.newCred(now)
		if ok && now.Before(c.Expires) {
			next.Previous, next.PreviousExpires, next.PreviousAgent = c.Token, minTime(c.Expires, now.Add(rotationGrace)), c.Agent
		}
		tf.Nodes[node] = next
		out = next.Token
		return nil
	})
	return out, err
}

// renewAt is when a holder of c should renew it: two thirds into its lifetime.
func renewAt(c NodeCred) time.Time {
	return c.Issued.Add(c.Expires.Sub(c.Issued) * 2 / 3)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// CheckJoinSecret compares in constant time.
func (a *Authenticator) CheckJoinSecret(s string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return subtle.ConstantTimeCompare([]byte(s), []byte(a.File.Join)) == 1
}

// ValidNodeName checks a node name as upstream's Node validation does (a DNS-1123
// subdomain), and further refuses IP addresses: a node's name is also a DNS name in its
// kubelet's serving certificate, where an IP is not a valid DNS SAN, and in logs it would
// read as the node's address. path names the field in the error.
func ValidNodeName(path *field.Path, name string) error {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(path, "a node name is required"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		if name != "" {
			errs = append(errs, field.Invalid(path, name, msg))
		}
	}
	if len(errs) == 0 && net.ParseIP(name) != nil {
		errs = append(errs, field.Invalid(path, name, "must be a DNS name, not an IP address"))
	}
	return errs.ToAggregate()
}

// ComponentToken returns the in-memory token of a component user, making it on first use.
func (a *Authenticator) ComponentToken(user string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if tok, ok := a.componentTokens[user]; ok {
		return tok
	}
	if a.componentTokens == nil {
		a.componentTokens = map[string]string{}
		a.components = map[[32]byte]admission.UserInfo{}
	}
	tok := randomToken(24)
	a.componentTokens[user] = tok
	a.components[sha256.Sum256([]byte(tok))] = admission.UserInfo{Name: user, Groups: []string{authz.AuthenticatedGroup}}
	return tok
}

// addAgentTokens maps c's enforcer tokens (current and, during a rotation's grace, the
// previous one) to node's enforcer.
func addAgentTokens(byHash map[[32]byte]tokenEntry, node string, c NodeCred) {
	u := networkPolicyAgent(node)
	if c.Agent != "" {
		byHash[sha256.Sum256([]byte(c.Agent))] = tokenEntry{user: u, expires: c.Expires}
	}
	if c.PreviousAgent != "" && c.Previous != "" {
		byHash[sha256.Sum256([]byte(c.PreviousAgent))] = tokenEntry{user: u, expires: c.PreviousExpires}
	}
}

// CurrentAgentToken is the enforcer's token of node's current credential (currentNodeToken
// rotates it when due). A credential kept from before enforcers had their own gets one here.
func (a *Authenticator) CurrentAgentToken(node string) (string, error) {
	if _, err := a.CurrentNodeToken(node); err != nil {
		return "", err
	}
	a.mu.RLock()
	c := a.File.Nodes[node]
	a.mu.RUnlock()
	if c.Agent != "" {
		return c.Agent, nil
	}
	var out string
	err := a.update(func(tf *tokenFile) error {
		c := tf.Nodes[node]
		if c.Agent == "" {
			c.Agent = randomToken(24)
			tf.Nodes[node] = c
		}
		out = c.Agent
		return nil
	})
	return out, err
}

func networkPolicyAgent(node string) admission.UserInfo {
	return admission.UserInfo{Name: NetworkPolicyAgentUserPrefix + node, Groups: []string{NetworkPolicyAgentsGroup, authz.AuthenticatedGroup}}
}

// LoadTokenFile reads token,user,uid[,"group1,group2"] lines; blank lines and lines
// starting with # are skipped. Every user is also in system:authenticated.
func LoadTokenFile(path string) (map[[32]byte]admission.UserInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token auth file: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	r.Comment = '#'
	r.TrimLeadingSpace = true
	m := map[[32]byte]admission.UserInfo{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("token auth file %s: %w", path, err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("token auth file %s, line %d: want token,user,uid[,groups], got %d fields", path, line, len(rec))
		}
		tok, name := strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
		if tok == "" || name == "" {
			return nil, fmt.Errorf("token auth file %s, line %d: token and user must not be empty", path, line)
		}
		h := sha256.Sum256([]byte(tok))
		if _, dup := m[h]; dup {
			return nil, fmt.Errorf("token auth file %s, line %d: duplicate token", path, line)
		}
		u := admission.UserInfo{Name: name}
		if len(rec) > 3 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		if !u.InGroup(authz.AuthenticatedGroup) {
			u.Groups = append(u.Groups, authz.AuthenticatedGroup)
		}
		m[h] = u
	}
	return m, nil
}
