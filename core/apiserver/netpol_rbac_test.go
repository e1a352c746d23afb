package apiserver_test

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestNodeReadsWhatNetworkPolicyNeeds: a kubelet's credential may list every pod,
// namespace and NetworkPolicy (system:wasmkube:network-policy-agent, bound to
// system:nodes), which its policy enforcer reads, and still may not list Secrets.
func TestNodeReadsWhatNetworkPolicyNeeds(t *testing.T) {
	srv := apiservertest.Start(t)
	c, err := kubernetes.NewForConfig(srv.NodeConfig(t, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list every pod: %v", err)
	}
	if _, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list namespaces: %v", err)
	}
	if _, err := c.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list networkpolicies: %v", err)
	}
	if _, err := c.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list endpointslices: %v", err)
	}
	if _, err := c.CoreV1().Secrets("").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets: %v, want forbidden", err)
	}
}
