package apiserver_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// startEtcd runs Debian's etcd server on loopback ports for the test.
func startEtcd(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd (Debian etcd-server, installed by scripts/deps.sh) is required: %v", err)
	}
	free := func() int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().(*net.TCPAddr).Port
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", free())
	peer := fmt.Sprintf("http://127.0.0.1:%d", free())
	cmd := exec.Command(bin, "--name", "e1", "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e1="+peer)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("etcd output:\n%s", logs.String())
		}
	})
	return client
}

// TestTwoServersShareOneEtcd: API servers on one external etcd serve one cluster: the
// same objects, the same CA, and each accepts the tokens the other issued.
func TestTwoServersShareOneEtcd(t *testing.T) {
	ep := startEtcd(t)
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
