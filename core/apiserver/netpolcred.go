package apiserver

import (
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/authn"
)

// The NetworkPolicy enforcer of each node (kubelet/netpol) reads every pod, namespace and
// NetworkPolicy of the cluster, which upstream's node authorizer does not let a kubelet do
// (it lists only its own pods). So the enforcer has a credential of its own, as a network
// agent's DaemonSet has its ServiceAccount upstream: issued at join beside the kubelet's,
// rotated, revoked and expiring with it (nodeCred.Agent), user
// system:wasmkube:network-policy-agent:<node> in group system:wasmkube:network-policy-agents,
// which RBAC's system:wasmkube:network-policy-agent binding lets list and watch pods and
// namespaces and read NetworkPolicies, and nothing else. docs/networkpolicy.md.
// The tokens are the authenticator's (authn/credentials.go).
const (
	NetworkPolicyAgentUserPrefix = authn.NetworkPolicyAgentUserPrefix
	NetworkPolicyAgentsGroup     = authn.NetworkPolicyAgentsGroup
)

// NetworkPolicyRESTConfig is the credential of the NetworkPolicy enforcer of nodeName's
// kubelet in this process (user system:wasmkube:network-policy-agent:<nodeName>), issued
// and rotated with the node's (NodeRESTConfig): every request carries the current token.
func (s *Server) NetworkPolicyRESTConfig(nodeName string) (*rest.Config, error) {
	if err := authn.ValidNodeName(field.NewPath("nodeName"), nodeName); err != nil {
		return nil, fmt.Errorf("apiserver: NetworkPolicy enforcer credential: %w", err)
	}
	tok, err := s.auth.CurrentAgentToken(nodeName)
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
	auth *authn.Authenticator
}

func (t *agentTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.auth.CurrentAgentToken(t.node)
	if err != nil {
		return nil, fmt.Errorf("NetworkPolicy enforcer credential for %s: %w", t.node, err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return t.rt.RoundTrip(req)
}
