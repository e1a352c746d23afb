package apiserver

import (
	"crypto/sha256"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/core/apiserver/authz"
)

// The NetworkPolicy enforcer of each node (kubelet/netpol) reads every pod, namespace and
// NetworkPolicy of the cluster, which upstream's node authorizer does not let a kubelet do
// (it lists only its own pods). So the enforcer has a credential of its own, as a network
// agent's DaemonSet has its ServiceAccount upstream: issued at join beside the kubelet's,
// rotated, revoked and expiring with it (nodeCred.Agent), user
// system:wasmkube:network-policy-agent:<node> in group system:wasmkube:network-policy-agents,
// which RBAC's system:wasmkube:network-policy-agent binding lets list and watch pods and
// namespaces and read NetworkPolicies, and nothing else. docs/networkpolicy.md.
const (
	NetworkPolicyAgentUserPrefix = "system:wasmkube:network-policy-agent:"
	NetworkPolicyAgentsGroup     = authz.NetworkPolicyAgentsGroup // RBAC binds it (rbac.go)
)

func networkPolicyAgent(node string) admission.UserInfo {
	return admission.UserInfo{Name: NetworkPolicyAgentUserPrefix + node, Groups: []string{NetworkPolicyAgentsGroup, authz.AuthenticatedGroup}}
}

// addAgentTokens maps c's enforcer tokens (current and, during a rotation's grace, the
// previous one) to node's enforcer.
func addAgentTokens(byHash map[[32]byte]tokenEntry, node string, c nodeCred) {
	u := networkPolicyAgent(node)
	if c.Agent != "" {
		byHash[sha256.Sum256([]byte(c.Agent))] = tokenEntry{user: u, expires: c.Expires}
	}
	if c.PreviousAgent != "" && c.Previous != "" {
		byHash[sha256.Sum256([]byte(c.PreviousAgent))] = tokenEntry{user: u, expires: c.PreviousExpires}
	}
}

// currentAgentToken is the enforcer's token of node's current credential (currentNodeToken
// rotates it when due). A credential kept from before enforcers had their own gets one here.
func (a *authenticator) currentAgentToken(node string) (string, error) {
	if _, err := a.currentNodeToken(node); err != nil {
		return "", err
	}
	a.mu.RLock()
	c := a.file.Nodes[node]
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

// NetworkPolicyRESTConfig is the credential of the NetworkPolicy enforcer of nodeName's
// kubelet in this process (user system:wasmkube:network-policy-agent:<nodeName>), issued
// and rotated with the node's (NodeRESTConfig): every request carries the current token.
func (s *Server) NetworkPolicyRESTConfig(nodeName string) (*rest.Config, error) {
	if err := validNodeName(field.NewPath("nodeName"), nodeName); err != nil {
		return nil, fmt.Errorf("apiserver: NetworkPolicy enforcer credential: %w", err)
	}
	tok, err := s.auth.currentAgentToken(nodeName)
	if err != nil {
		return nil, fmt.Errorf("apiserver: issue the NetworkPolicy enforcer's token for node %s: %w", nodeName, err)
	}
	cfg := s.restConfig(tok)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &agentTokenTransport{rt: rt, node: nodeName, auth: s.auth}
	}
	return cfg, nil
}

// agentTokenTransport sets the enforcer's current token on each request.
type agentTokenTransport struct {
	rt   http.RoundTripper
	node string
	auth *authenticator
}

func (t *agentTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.auth.currentAgentToken(t.node)
	if err != nil {
		return nil, fmt.Errorf("NetworkPolicy enforcer credential for %s: %w", t.node, err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return t.rt.RoundTrip(req)
}
