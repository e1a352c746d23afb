package apiserver_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestTwoServersShareOneEtcd: API servers on one external etcd serve one cluster: the
// same objects, the same CA, and each accepts the tokens the other issued.
func TestTwoServersShareOneEtcd(t *testing.T) {
	ep := apiservertest.StartEtcd(t, 1).Endpoints()[0]
	a := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	b := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	if !bytes.Equal(a.API.CACertPEM(), b.API.CACertPEM()) {
		t.Fatal("the servers have different CAs")
	}
	if _, err := a.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A's admin credential against B.
	cfg := *a.Config
	cfg.Host = b.URL
	if _, err := mustClient(t, &cfg).CoreV1().ConfigMaps("default").Get(ctx, "shared", metav1.GetOptions{}); err != nil {
		t.Fatalf("A's admin token on B: %v", err)
	}
	// A node credential issued by A, used on B.
	node := a.NodeConfig(t, "n1")
	node.Host = b.URL
	if _, err := mustClient(t, node).CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("A's node token on B: %v", err)
	}
	// B issues the same token for the same node.
	if got := b.NodeConfig(t, "n1").BearerToken; got != a.NodeConfig(t, "n1").BearerToken {
		t.Fatal("the servers issued different tokens for one node")
	}
}
