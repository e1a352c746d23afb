package apiserver_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver"
	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/storage"
)

// dataDirWithKey is a fresh data dir holding the identity key of from, as an operator
// prepares a second server (docs/security.md).
func dataDirWithKey(t *testing.T, from *apiservertest.Server) string {
	t.Helper()
	dir := t.TempDir()
	key, err := os.ReadFile(filepath.Join(from.DataDir, "identity.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "identity.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rawIdentity is the identity record as etcd holds it (a protobuf Secret), with the
// data decoded appended, so a test can look for a secret in either form.
func rawIdentity(t *testing.T, ep string) []byte {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.Get(cctx, "/registry/wasmkube-identity/cluster")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("read identity record: %v", err)
	}
	raw := resp.Kvs[0].Value
	var sec corev1.Secret
	if err := storage.DecodeValue(raw, &sec); err != nil {
		t.Fatalf("identity record: %v", err)
	}
	out := append([]byte(nil), raw...)
	for _, v := range sec.Data {
		out = append(out, v...)
	}
	return out
}

// TestTwoServersShareOneEtcd: API servers on one external etcd serve one cluster: the
// same objects, the same CA, and each accepts the tokens the other issued.
func TestTwoServersShareOneEtcd(t *testing.T) {
	ep := apiservertest.StartEtcd(t, 1).Endpoints()[0]
	a := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	b := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep), apiservertest.WithDataDir(dataDirWithKey(t, a)))
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

// TestIdentitySealedInEtcd: etcd never holds the CA key or a token in the clear; a server
// without the cluster's identity key is refused with what to do; a plain record from
// before the encryption is read and sealed.
func TestIdentitySealedInEtcd(t *testing.T) {
	ep := apiservertest.StartEtcd(t, 1).Endpoints()[0]
	a := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	nodeTok := a.NodeConfig(t, "n1").BearerToken
	caKey := readFile(t, filepath.Join(a.DataDir, "pki", "ca.key"))
	assertSealed := func() {
		t.Helper()
		raw := string(rawIdentity(t, ep))
		for what, secret := range map[string]string{"admin token": a.Config.BearerToken, "node token": nodeTok, "CA key": strings.Split(caKey, "\n")[1]} {
			if strings.Contains(raw, secret) {
				t.Fatalf("etcd holds the %s in the clear", what)
			}
		}
		if !strings.Contains(raw, "wasmkube.io/identity-aes-gcm-v1") {
			t.Fatal("identity record is not marked sealed")
		}
	}
	assertSealed()

	// No key: refused, naming the file to copy.
	_, err := apiserverNew(t, ep, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "identity.key") {
		t.Fatalf("server without the key: %v", err)
	}

	// A record from before the encryption: the files as plain Secret data.
	be, err := storage.NewBackend(ctx, storage.Config{Endpoints: []string{ep}})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	st := be.ForResource("wasmkube-identity", func() runtime.Object { return &corev1.Secret{} }, func() runtime.Object { return &corev1.SecretList{} })
	plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Data: map[string][]byte{}}
	for name, path := range map[string]string{"ca.crt": "pki/ca.crt", "ca.key": "pki/ca.key", "tokens.json": "tokens.json"} {
		plain.Data[name] = []byte(readFile(t, filepath.Join(a.DataDir, path)))
	}
	if _, err := st.GuaranteedUpdate(ctx, storage.Key("wasmkube-identity", "", "cluster"), nil, func(runtime.Object) (runtime.Object, error) { return plain, nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(rawIdentity(t, ep)), nodeTok) {
		t.Fatal("test setup: the plain record does not hold the node token")
	}
	// An upgraded server with no key reads it, makes a key and seals the record.
	c := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	if !bytes.Equal(a.API.CACertPEM(), c.API.CACertPEM()) {
		t.Fatal("upgraded server has another CA")
	}
	node := c.NodeConfig(t, "n1")
	if node.BearerToken != nodeTok {
		t.Fatal("upgraded server lost the node token")
	}
	if _, err := os.Stat(filepath.Join(c.DataDir, "identity.key")); err != nil {
		t.Fatal(err)
	}
	assertSealed()
}

// apiserverNew is apiserver.New on an external etcd, for a start that must fail.
func apiserverNew(t *testing.T, ep, dir string) (*apiserver.Server, error) {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := apiserver.New(cctx, apiserver.Options{DataDir: dir, Listen: "127.0.0.1:0", EtcdEndpoints: []string{ep},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err == nil {
		t.Cleanup(func() { _ = s.Run(cctx) })
	}
	return s, err
}
