package apiserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
)

// Well-known identities.
const (
	adminUser      = "wasmkube-admin"
	loopbackUser   = "system:apiserver"
	mastersGroup   = "system:masters"
	authedGroup    = "system:authenticated"
	tokensFileName = "tokens.json"
	joinTokenFile  = "join-token"
)

// tokenFile is the persisted form of every bearer token the server issued.
type tokenFile struct {
	Admin    string            `json:"admin"`
	Loopback string            `json:"loopback"`
	Join     string            `json:"joinSecret"`
	Nodes    map[string]string `json:"nodes"` // node name -> token
}

// authenticator maps bearer tokens to users. Tokens are looked up by their sha256 so the
// map lookup does not compare secrets byte by byte.
type authenticator struct {
	mu     sync.RWMutex
	path   string
	file   tokenFile
	byHash map[[32]byte]admission.UserInfo

	// shared is set on an external etcd: node tokens are published there and unknown
	// tokens re-read from there (at most once per refreshInterval).
	shared      *sharedIdentity
	refreshMu   sync.Mutex
	lastRefresh time.Time
}

func loadOrCreateTokens(dataDir string) (*authenticator, error) {
	a := &authenticator{path: filepath.Join(dataDir, tokensFileName)}
	b, err := os.ReadFile(a.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		a.file = tokenFile{Admin: randomToken(24), Loopback: randomToken(24), Join: randomToken(16), Nodes: map[string]string{}}
		if err := a.saveLocked(); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, fmt.Errorf("read tokens: %w", err)
	default:
		if err := json.Unmarshal(b, &a.file); err != nil {
			return nil, fmt.Errorf("parse %s: %w", a.path, err)
		}
		if a.file.Nodes == nil {
			a.file.Nodes = map[string]string{}
		}
		if a.file.Admin == "" || a.file.Loopback == "" || a.file.Join == "" {
			return nil, fmt.Errorf("%s is missing a token; remove it to generate new ones", a.path)
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
	a.byHash = map[[32]byte]admission.UserInfo{
		sha256.Sum256([]byte(a.file.Admin)):    {Name: adminUser, Groups: []string{mastersGroup, authedGroup}},
		sha256.Sum256([]byte(a.file.Loopback)): {Name: loopbackUser, Groups: []string{mastersGroup, authedGroup}},
	}
	for node, tok := range a.file.Nodes {
		a.byHash[sha256.Sum256([]byte(tok))] = admission.UserInfo{
			Name: admission.NodeUserPrefix + node, Groups: []string{admission.NodesGroup, authedGroup}}
	}
}

// authenticate returns the user of a bearer token.
func (a *authenticator) authenticate(token string) (admission.UserInfo, bool) {
	if token == "" {
		return admission.UserInfo{}, false
	}
	h := sha256.Sum256([]byte(token))
	a.mu.RLock()
	u, ok := a.byHash[h]
	a.mu.RUnlock()
	if ok || a.shared == nil || !a.refresh() {
		return u, ok
	}
	a.mu.RLock()
	u, ok = a.byHash[h]
	a.mu.RUnlock()
	return u, ok
}

// refresh merges the node tokens published by other API servers; it reports whether it
// read them (it does at most once per refreshInterval).
func (a *authenticator) refresh() bool {
	a.refreshMu.Lock()
	defer a.refreshMu.Unlock()
	if time.Since(a.lastRefresh) < refreshInterval {
		return false
	}
	a.lastRefresh = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tf, err := a.shared.tokens(ctx)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	changed := false
	for node, tok := range tf.Nodes {
		if a.file.Nodes[node] != tok {
			a.file.Nodes[node] = tok
			changed = true
		}
	}
	if changed {
		_ = a.saveLocked()
		a.rebuildLocked()
	}
	return changed
}

// nodeToken returns the token of node, issuing and persisting one on first use.
func (a *authenticator) nodeToken(node string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.file.Nodes[node]; ok {
		return t, nil
	}
	t := randomToken(24)
	if a.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		winner, err := a.shared.addNodeToken(ctx, node, t)
		cancel()
		if err != nil {
			return "", fmt.Errorf("publish node token: %w", err)
		}
		t = winner
	}
	a.file.Nodes[node] = t
	if err := a.saveLocked(); err != nil {
		delete(a.file.Nodes, node)
		return "", err
	}
	a.rebuildLocked()
	return t, nil
}

// checkJoinSecret compares in constant time.
func (a *authenticator) checkJoinSecret(s string) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return subtle.ConstantTimeCompare([]byte(s), []byte(a.file.Join)) == 1
}

func bearerToken(h string) string {
	const p = "Bearer "
	if len(h) > len(p) && strings.EqualFold(h[:len(p)], p) {
		return strings.TrimSpace(h[len(p):])
	}
	return ""
}

// requestInfo is what authorization and admission need to know about a request.
type requestInfo struct {
	resourceRequest bool
	verb            string // get list watch create update patch delete deletecollection
	res             *resource
	namespace       string
	name            string
	subresource     string
}

// authorize decides the coarse verb/resource question. Object-level limits for kubelets
// (their own Node, pods bound to them) are enforced by admission.NodeRestriction.
func authorize(u admission.UserInfo, ri *requestInfo) (bool, string) {
	if u.InGroup(mastersGroup) {
		return true, ""
	}
	if !ri.resourceRequest {
		return true, "" // discovery, version, openapi, metrics: any authenticated user
	}
	resName := ri.res.gvr.Resource
	if ri.verb == "create" && (resName == "selfsubjectreviews" || resName == "selfsubjectaccessreviews" || resName == "selfsubjectrulesreviews") {
		return true, "" // any authenticated user may ask about itself, as upstream's system:basic-user
	}
	node := admission.NodeName(u)
	if node == "" {
		return false, "user has no permissions"
	}
	switch ri.verb {
	case "get", "list", "watch":
		if resName == "pods" && ri.subresource == "log" {
			return false, fmt.Sprintf("node %q may not read pod logs", node)
		}
		return true, ""
	}
	switch {
	case resName == "nodes" && (ri.subresource == "" || ri.subresource == "status") && ri.verb != "deletecollection":
		return true, ""
	case resName == "leases" && ri.verb != "deletecollection":
		return true, ""
	case resName == "pods" && ri.subresource == "status" && (ri.verb == "update" || ri.verb == "patch"):
		return true, ""
	case resName == "pods" && ri.subresource == "" && ri.verb == "delete":
		return true, ""
	case resName == "events" && (ri.verb == "create" || ri.verb == "update" || ri.verb == "patch"):
		return true, ""
	case resName == "tokenreviews" && ri.verb == "create":
		return true, ""
	}
	return false, fmt.Sprintf("node %q may not %s %s", node, ri.verb, subName(resName, ri.subresource))
}

func subName(res, sub string) string {
	if sub == "" {
		return res
	}
	return res + "/" + sub
}
