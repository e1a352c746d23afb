package apiserver_test

import (
	"context"
	"net/http"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestNetworkPolicyEnforcerCredential: the NetworkPolicy enforcer's credential, issued at
// join beside the kubelet's, lists and watches every pod and namespace and reads
// NetworkPolicies (system:wasmkube:network-policy-agent, bound to the group
// system:wasmkube:network-policy-agents) and nothing else; the kubelet's own credential
// stays within upstream's node authorizer (its own pods only, no NetworkPolicies).
// The enforcer's token is renewed and revoked with the node's.
func TestNetworkPolicyEnforcerCredential(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	clientOf := func(tok string) kubernetes.Interface {
		return mustClient(t, &rest.Config{Host: srv.URL, BearerToken: tok, TLSClientConfig: rest.TLSClientConfig{CAData: srv.API.CACertPEM()}})
	}
	c, secret := credClient{t, srv.URL}, joinSecret(t, srv)
	code, _, b := c.post("/wasmkube/v1/join", secret, `{"nodeName":"n1"}`)
	if code != 200 {
		t.Fatalf("join: %d %s", code, b)
	}
	cred := decodeCred(t, b)
	if cred.NetworkPolicyToken == "" || cred.NetworkPolicyToken == cred.Token {
		t.Fatalf("join answer has no NetworkPolicy enforcer credential of its own: %s", b)
	}
	node, agent := clientOf(cred.Token), clientOf(cred.NetworkPolicyToken)

	// The kubelet: upstream's node authorizer.
	if _, err := node.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node lists every pod: %v, want forbidden", err)
	}
	if _, err := node.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=n1"}); err != nil {
		t.Errorf("node lists its own pods: %v", err)
	}
	if _, err := node.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("node lists networkpolicies: %v, want forbidden", err)
	}
	if _, err := node.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("node lists endpointslices (its proxy): %v", err)
	}

	// The enforcer: what Plan reads, nothing more.
	if _, err := agent.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("enforcer lists every pod: %v", err)
	}
	w, err := agent.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Errorf("enforcer watches every pod: %v", err)
	} else {
		w.Stop()
	}
	if _, err := agent.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("enforcer lists namespaces: %v", err)
	}
	if _, err := agent.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("enforcer lists networkpolicies: %v", err)
	}
	for what, err := range map[string]error{
		"lists secrets":      errOf(agent.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})),
		"lists endpoints":    errOf(agent.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{})),
		"creates a pod":      errOf(agent.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, metav1.CreateOptions{})),
		"updates its Node":   errOf(agent.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{})),
		"renews a node cred": codeErr(c.post("/wasmkube/v1/renew", cred.NetworkPolicyToken, "")),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("enforcer %s: %v, want forbidden", what, err)
		}
	}
	review, err := agent.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("whoami: %v", err)
	}
	if u := review.Status.UserInfo; u.Username != apiserver.NetworkPolicyAgentUserPrefix+"n1" || !contains(u.Groups, apiserver.NetworkPolicyAgentsGroup) {
		t.Errorf("enforcer is %q %v", u.Username, u.Groups)
	}

	// Renewed with the node's credential (the old one passes during the grace), revoked
	// with it.
	code, _, b = c.post("/wasmkube/v1/renew", cred.Token, "")
	if code != 200 {
		t.Fatalf("renew: %d %s", code, b)
	}
	next := decodeCred(t, b)
	if next.NetworkPolicyToken == "" || next.NetworkPolicyToken == cred.NetworkPolicyToken {
		t.Fatalf("renewal did not renew the enforcer's token: %s", b)
	}
	for _, tok := range []string{cred.NetworkPolicyToken, next.NetworkPolicyToken} {
		if _, err := clientOf(tok).CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Errorf("enforcer token after renewal: %v", err)
		}
	}
	if code, _, b := c.post("/wasmkube/v1/revoke", srv.Config.BearerToken, `{"nodeName":"n1"}`); code != 200 {
		t.Fatalf("revoke: %d %s", code, b)
	}
	for _, tok := range []string{cred.NetworkPolicyToken, next.NetworkPolicyToken} {
		if _, err := clientOf(tok).CoreV1().Pods("").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("revoked enforcer token: %v, want unauthorized", err)
		}
	}

	// The in-process kubelet's enforcer (up) gets the same identity.
	inproc := mustClient(t, srv.NetworkPolicyConfig(t, "n2"))
	if _, err := inproc.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("in-process enforcer lists every pod: %v", err)
	}
}

func errOf[T any](_ T, err error) error { return err }

// codeErr is a credential endpoint's answer as an API error of its code (nil for 200).
func codeErr(code int, _ http.Header, b []byte) error {
	if code == http.StatusOK {
		return nil
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Message: string(b)}}
}
