package apiserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
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
	Nodes    map[string]nodeCred `json:"nodeCredentials"`
	// LegacyNodes is the form before node credentials expired (node -> token); it is
	// read once, converted into Nodes with a fresh expiry, and not written again.
	LegacyNodes map[string]string `json:"nodes,omitempty"`
}

// nodeCred is one node's bearer credential (user system:node:<name>).
type nodeCred struct {
	Token   string    `json:"token"`
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`
	// Previous is the token this one replaced, accepted until PreviousExpires.
	Previous        string    `json:"previous,omitempty"`
	PreviousExpires time.Time `json:"previousExpires,omitempty"`
	// Agent is the token of the node's NetworkPolicy enforcer (netpolcred.go), issued,
	// rotated, revoked and expiring with Token; PreviousAgent goes with Previous.
	Agent         string `json:"agent,omitempty"`
	PreviousAgent string `json:"previousAgent,omitempty"`
}

// normalize converts the legacy node map and makes Nodes non-nil.
func (tf *tokenFile) normalize(now time.Time, ttl time.Duration) {
	if tf.Nodes == nil {
		tf.Nodes = map[string]nodeCred{}
	}
	for node, tok := range tf.LegacyNodes {
		if _, ok := tf.Nodes[node]; !ok {
			tf.Nodes[node] = nodeCred{Token: tok, Issued: now, Expires: now.Add(ttl)}
		}
	}
	tf.LegacyNodes = nil
}

func (tf tokenFile) clone() tokenFile {
	c := tf
	c.Nodes = make(map[string]nodeCred, len(tf.Nodes))
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

// authenticator maps bearer tokens to users. Tokens are looked up by their sha256 so the
// map lookup does not compare secrets byte by byte.
type authenticator struct {
	ttl time.Duration
	now func() time.Time

	mu     sync.RWMutex
	path   string
	file   tokenFile
	byHash map[[32]byte]tokenEntry
	// components are the in-memory tokens of the in-process scheduler and controller
	// manager (components.go), by token hash and by user.
	components      map[[32]byte]admission.UserInfo
	componentTokens map[string]string

	// writeMu serialises changes to node credentials (which may wait on etcd) without
	// holding mu, so authentication never waits for etcd.
	writeMu sync.Mutex

	// shared is set on an external etcd: node credentials are changed there first and
	// re-read from there (on an unknown token, at most once per refreshInterval, and every
	// sharedResyncInterval so revocations reach every server).
	shared      *sharedIdentity
	refreshMu   sync.Mutex
	lastRefresh time.Time
}

func loadOrCreateTokens(dataDir string, ttl time.Duration) (*authenticator, error) {
	if ttl <= 0 {
		ttl = DefaultNodeCredentialTTL
	}
	a := &authenticator{path: filepath.Join(dataDir, tokensFileName), ttl: ttl, now: time.Now}
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		a.file = tokenFile{Admin: randomToken(24), Loopback: randomToken(24), Join: randomToken(16), Nodes: map[string]nodeCred{}}
		if err := a.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("read tokens: %w", err)
	default:
		if err := json.Unmarshal(b, &a.file); err != nil {
			return nil, fmt.Errorf("parse %s: %w", a.path, err)
		}
		if a.file.Admin == "" || a.file.Loopback == "" || a.file.Join == "" {
			return nil, fmt.Errorf("%s is missing a token; remove it to generate new ones", a.path)
		}
		legacy := len(a.file.LegacyNodes) > 0
		a.file.normalize(a.now(), ttl)
		if legacy {
			if err := a.saveLocked(); err != nil {
				return nil, err
			}
		}
	}
	a.rebuildLocked()
	return a, nil
}

func (a *authenticator) saveLocked() error {
	b, err := json.MarshalIndent(a.file, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(a.path, b, 0o600)
}

func (a *authenticator) rebuildLocked() {
	a.byHash = map[[32]byte]tokenEntry{
		sha256.Sum256([]byte(a.file.Admin)):    {user: admission.UserInfo{Name: adminUser, Groups: []string{authz.MastersGroup, authz.AuthenticatedGroup}}},
		sha256.Sum256([]byte(a.file.Loopback)): {user: admission.UserInfo{Name: loopbackUser, Groups: []string{authz.MastersGroup, authz.AuthenticatedGroup}}},
	}
	for node, c := range a.file.Nodes {
		u := admission.UserInfo{Name: admission.NodeUserPrefix + node, Groups: []string{admission.NodesGroup, authz.AuthenticatedGroup}}
		a.byHash[sha256.Sum256([]byte(c.Token))] = tokenEntry{user: u, expires: c.Expires}
		if c.Previous != "" {
			a.byHash[sha256.Sum256([]byte(c.Previous))] = tokenEntry{user: u, expires: c.PreviousExpires}
		}
		addAgentTokens(a.byHash, node, c)
	}
}

// lookup returns the user of a token that is known and not expired.
func (a *authenticator) lookup(h [32]byte) (admission.UserInfo, bool) {
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

// authenticate returns the user of a bearer token.
func (a *authenticator) authenticate(token string) (admission.UserInfo, bool) {
	if token == "" {
		return admission.UserInfo{}, false
	}
	h := sha256.Sum256([]byte(token))
	if u, ok := a.lookup(h); ok || a.shared == nil || !a.refresh(false) {
		return u, ok
	}
	return a.lookup(h)
}

// refresh replaces the node credentials with the ones in etcd (the truth when servers
// share one), at most once per refreshInterval unless force; it reports whether they
// changed.
func (a *authenticator) refresh(force bool) bool {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	if !force && time.Since(a.lastRefresh) < refreshInterval {
		return false
	}
	a.lastRefresh = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tf, err := a.shared.tokens(ctx)
	if err != nil {
		return false
	}
	tf.normalize(a.now(), a.ttl)
	a.mu.Lock()
	defer a.mu.Unlock()
	if equalNodes(a.file.Nodes, tf.Nodes) {
		return false
	}
	a.file.Nodes = tf.Nodes
	_ = a.saveLocked()
	a.rebuildLocked()
	return true
}

func equalNodes(x, y map[string]nodeCred) bool {
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

// resync re-reads the shared credentials every interval until ctx ends, so a credential
// revoked or rotated through another server stops working here too.
func (a *authenticator) resync(ctx context.Context, interval time.Duration) {
	if a.shared == nil {
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
func (a *authenticator) update(fn func(tf *tokenFile) error) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	var next tokenFile
	if a.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tf, err := a.shared.updateTokens(ctx, func(tf *tokenFile) error {
			tf.normalize(a.now(), a.ttl)
			return fn(tf)
		})
		if err != nil {
			return err
		}
		a.mu.RLock()
		next = a.file.clone()
		a.mu.RUnlock()
		next.Nodes = tf.Nodes
	} else {
		a.mu.RLock()
		next = a.file.clone()
		a.mu.RUnlock()
		if err := fn(&next); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	prev := a.file
	a.file = next
	if err := a.saveLocked(); err != nil {
		a.file = prev
		return err
	}
	a.rebuildLocked()
	return nil
}

func (a *authenticator) newCred(now time.Time) nodeCred {
	return nodeCred{Token: randomToken(24), Agent: randomToken(24), Issued: now, Expires: now.Add(a.ttl)}
}

// errNodeHasCredential: a join for a node whose credential is still valid.
var errNodeHasCredential = errors.New("node already has a valid credential")

// join issues a credential for a node that has none, or whose credential has expired.
// It never hands out a credential that exists: that one belongs to whoever joined first.
func (a *authenticator) join(node string) (nodeCred, error) {
	var out nodeCred
	err := a.update(func(tf *tokenFile) error {
		now := a.now()
		if c, ok := tf.Nodes[node]; ok && now.Before(c.Expires) {
			return errNodeHasCredential
		}
		out = a.newCred(now)
		tf.Nodes[node] = out
		return nil
	})
	return out, err
}

// errNotCurrent: a renewal with a token that is no longer the node's.
var errNotCurrent = errors.New("the credential is not the node's current one")

// rotate replaces the node's credential presented as token with a new one; the old one
// stays valid for rotationGrace. A retried renewal (token is the one the last rotation
// replaced) gets the current credential again instead of a third one.
func (a *authenticator) rotate(node, token string) (nodeCred, error) {
	var out nodeCred
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
			return errNotCurrent
		}
		return nil
	})
	return out, err
}

// revoke drops the node's credential; it reports whether there was one.
func (a *authenticator) revoke(node string) (bool, error) {
	found := false
	err := a.update(func(tf *tokenFile) error {
		_, found = tf.Nodes[node]
		delete(tf.Nodes, node)
		return nil
	})
	return found, err
}

// currentNodeToken is the token in-process components of this server use for node: the
// current one, rotated here once two thirds of its lifetime have passed (or issued when
// there is none). In-process callers already hold the admin's trust, so they, unlike a
// join, may be handed an existing credential.
func (a *authenticator) currentNodeToken(node string) (string, error) {
	a.mu.RLock()
	c, ok := a.file.Nodes[node]
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
func renewAt(c nodeCred) time.Time {
	return c.Issued.Add(c.Expires.Sub(c.Issued) * 2 / 3)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// checkJoinSecret compares in constant time.
func (a *authenticator) checkJoinSecret(s string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return subtle.ConstantTimeCompare([]byte(s), []byte(a.file.Join)) == 1
}

// validNodeName checks a node name as upstream's Node validation does (a DNS-1123
// subdomain), and further refuses IP addresses: a node's name is also a DNS name in its
// kubelet's serving certificate, where an IP is not a valid DNS SAN, and in logs it would
// read as the node's address. path names the field in the error.
func validNodeName(path *field.Path, name string) error {
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
