package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authn"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
	"github.com/wasmkube/wasmkube/core/apiserver/handlers"
)

// The node credential endpoints (docs/security.md, "Node credentials"):
//
//	POST /wasmkube/v1/join    join secret   -> a new credential for a node that has none
//	POST /wasmkube/v1/renew   node token    -> the node's next credential (rotation)
//	POST /wasmkube/v1/revoke  admin         -> the node's credential is dropped
const (
	joinPath   = "/wasmkube/v1/join"
	renewPath  = "/wasmkube/v1/renew"
	revokePath = "/wasmkube/v1/revoke"
)

// Failure budgets per source IP. A join is rare (once per node), so a wrong join secret
// leaves little room; bearer tokens are presented on every request, and a client with a
// stale token should be told to back off, not locked out at once.
var (
	joinFailureRate, joinFailureBurst     = 0.2, 5
	bearerFailureRate, bearerFailureBurst = 1.0, 20
)

// JoinRequest is the body of POST /wasmkube/v1/join and /wasmkube/v1/revoke.
type JoinRequest struct {
	NodeName string `json:"nodeName"`
}

// JoinResponse carries a kubelet's credential (join and renew).
type JoinResponse struct {
	// Token is the node's bearer token (user system:node:<nodeName>).
	Token string `json:"token"`
	// CACert is the cluster CA certificate (PEM); its sha256 must equal the hash in the
	// join token.
	CACert string `json:"caCert"`
	// Issued and Expires bound the token's validity; a kubelet renews at two thirds.
	Issued  time.Time `json:"issued"`
	Expires time.Time `json:"expires"`
	// NetworkPolicyToken is the credential of the node's NetworkPolicy enforcer (user
	// system:wasmkube:network-policy-agent:<nodeName>), valid and renewed with Token.
	NetworkPolicyToken string `json:"networkPolicyToken,omitempty"`
}

var credentialsResource = schema.GroupResource{Group: "wasmkube", Resource: "nodecredentials"}

// serveJoin exchanges the join secret for a node credential. It never hands out a
// credential that exists: a name whose credential is valid gets 409 until it expires or
// an admin revokes it.
func (s *Server) serveJoin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		handlers.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: "wasmkube", Resource: "join"}, strings.ToLower(r.Method)))
		return
	}
	src := authn.SourceIP(r)
	// A source over its budget is not even checked: the join secret mints identities.
	if wait, blocked := s.joinFailures.Blocked(src); blocked {
		authn.WriteTooManyFailures(w, "join", wait)
		return
	}
	if !s.auth.CheckJoinSecret(bearerToken(r.Header.Get("Authorization"))) {
		if wait, over := s.joinFailures.Fail(src); over {
			authn.WriteTooManyFailures(w, "join", wait)
			return
		}
		handlers.WriteError(w, apierrors.NewUnauthorized("Unauthorized: join with the secret after '::' in the server's join-token"))
		return
	}
	jr, ok := readJoinRequest(w, r)
	if !ok {
		return
	}
	cred, err := s.auth.Join(jr.NodeName)
	if errors.Is(err, authn.ErrNodeHasCredential) {
		s.log.Warn("join refused: node has a credential", "node", jr.NodeName, "remote", r.RemoteAddr)
		handlers.WriteError(w, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusConflict, Reason: metav1.StatusReasonAlreadyExists,
			Details: &metav1.StatusDetails{Group: credentialsResource.Group, Kind: credentialsResource.Resource, Name: jr.NodeName},
			Message: fmt.Sprintf("node %q already has a valid credential: a kubelet keeps and renews the one it joined with; "+
				"to join again under this name an admin first revokes it (POST %s {\"nodeName\":%q})", jr.NodeName, revokePath, jr.NodeName),
		}})
		return
	}
	if err != nil {
		handlers.WriteError(w, apierrors.NewInternalError(fmt.Errorf("issue credential for node %s: %w", jr.NodeName, err)))
		return
	}
	s.log.Info("node joined", "node", jr.NodeName, "remote", r.RemoteAddr, "expires", cred.Expires)
	handlers.WriteJSON(w, http.StatusOK, s.joinResponse(cred), handlers.OutJSON)
}

func (s *Server) joinResponse(c authn.NodeCred) JoinResponse {
	return JoinResponse{Token: c.Token, CACert: string(s.pki.CAPEM), Issued: c.Issued.UTC(), Expires: c.Expires.UTC(), NetworkPolicyToken: c.Agent}
}

// readJoinRequest decodes and validates a {"nodeName": ...} body; it answers the error.
func readJoinRequest(w http.ResponseWriter, r *http.Request) (JoinRequest, bool) {
	var jr JoinRequest
	body, err := handlers.ReadBody(w, r)
	if err != nil {
		handlers.WriteError(w, err)
		return jr, false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jr); err != nil {
		handlers.WriteError(w, apierrors.NewBadRequest("malformed node credential request: "+err.Error()))
		return jr, false
	}
	if err := authn.ValidNodeName(field.NewPath("nodeName"), jr.NodeName); err != nil {
		handlers.WriteError(w, apierrors.NewBadRequest("invalid node credential request: "+err.Error()))
		return jr, false
	}
	return jr, true
}

// authenticateLimited authenticates r's bearer token, answering 401 or (over the
// source's failure budget) 429 when it fails.
func (s *Server) authenticateLimited(w http.ResponseWriter, r *http.Request) (admission.UserInfo, bool) {
	u, ok := s.authenticate(r.Context(), bearerToken(r.Header.Get("Authorization")))
	if ok {
		return u, true
	}
	if wait, over := s.bearerFailures.Fail(authn.SourceIP(r)); over {
		authn.WriteTooManyFailures(w, "authentication", wait)
		return u, false
	}
	handlers.WriteError(w, apierrors.NewUnauthorized("Unauthorized: a valid bearer token is required (see admin.kubeconfig in the server's data dir)"))
	return u, false
}

// serveRenew gives a node, authenticated by its current token, its next credential.
func (s *Server) serveRenew(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		handlers.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: "wasmkube", Resource: "renew"}, strings.ToLower(r.Method)))
		return
	}
	u, ok := s.authenticateLimited(w, r)
	if !ok {
		return
	}
	node := admission.NodeName(u)
	if node == "" {
		handlers.WriteError(w, apierrors.NewForbidden(credentialsResource, "", fmt.Errorf("user %q is not a node: only a node renews its own credential", u.Name)))
		return
	}
	cred, err := s.auth.Rotate(node, bearerToken(r.Header.Get("Authorization")))
	if errors.Is(err, authn.ErrNotCurrent) {
		handlers.WriteError(w, apierrors.NewUnauthorized(fmt.Sprintf("Unauthorized: renew node %s with its current credential", node)))
		return
	}
	if err != nil {
		handlers.WriteError(w, apierrors.NewInternalError(fmt.Errorf("renew credential of node %s: %w", node, err)))
		return
	}
	s.log.Info("node credential renewed", "node", node, "remote", r.RemoteAddr, "expires", cred.Expires)
	handlers.WriteJSON(w, http.StatusOK, s.joinResponse(cred), handlers.OutJSON)
}

// serveRevoke drops a node's credential (admin only); the name can then join again.
func (s *Server) serveRevoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		handlers.WriteError(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: "wasmkube", Resource: "revoke"}, strings.ToLower(r.Method)))
		return
	}
	u, ok := s.authenticateLimited(w, r)
	if !ok {
		return
	}
	if !u.InGroup(authz.MastersGroup) {
		handlers.WriteError(w, apierrors.NewForbidden(credentialsResource, "", fmt.Errorf("user %q may not revoke node credentials: that takes group %s", u.Name, authz.MastersGroup)))
		return
	}
	jr, ok := readJoinRequest(w, r)
	if !ok {
		return
	}
	found, err := s.auth.Revoke(jr.NodeName)
	if err != nil {
		handlers.WriteError(w, apierrors.NewInternalError(fmt.Errorf("revoke credential of node %s: %w", jr.NodeName, err)))
		return
	}
	if !found {
		handlers.WriteError(w, apierrors.NewNotFound(credentialsResource, jr.NodeName))
		return
	}
	s.log.Info("node credential revoked", "node", jr.NodeName, "by", u.Name)
	handlers.WriteJSON(w, http.StatusOK, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Code: http.StatusOK, Details: &metav1.StatusDetails{Group: credentialsResource.Group, Kind: credentialsResource.Resource, Name: jr.NodeName},
		Message: fmt.Sprintf("credential of node %q revoked", jr.NodeName)}, handlers.OutJSON)
}
