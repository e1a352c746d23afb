package apiserver_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// Two API servers of one cluster (one external etcd) share the service account signing
// key and the default encryption config through the sealed identity record, as they share
// the CA: each reads the Secrets the other wrote and accepts the other's service account
// tokens. A key rotation edited on one server reaches the other at its restart; a server
// whose own, never-synced encryption config differs from the cluster's refuses to start.
func TestTwoServersShareSecretsAndServiceAccountKeys(t *testing.T) {
	ep := apiservertest.StartEtcd(t, 1).Endpoints()[0]
	a := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep))
	bDir := dataDirWithKey(t, a)
	b := apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep), apiservertest.WithDataDir(bDir))
	for _, f := range []string{"pki/sa.key", "encryption-config.yaml"} {
		x, err1 := os.ReadFile(filepath.Join(a.DataDir, f))
		y, err2 := os.ReadFile(filepath.Join(b.DataDir, f))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Fatalf("%s differs between the servers (%v, %v)", f, err1, err2)
		}
	}
	if raw := rawIdentity(t, ep); bytes.Contains(raw, []byte("EC PRIVATE KEY")) || bytes.Contains(raw, []byte("aesgcm")) {
		t.Fatal("the identity record in etcd holds sa.key or the encryption config in the clear")
	}

	secret := func(name, value string) {
		t.Helper()
		if _, err := a.Client.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string][]byte{"v": []byte(value)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	readOnB := func(b *apiservertest.Server, name, value string) {
		t.Helper()
		s, err := b.Client.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || string(s.Data["v"]) != value {
			t.Fatalf("secret %s through B: %v %q", name, err, s.Data["v"])
		}
	}
	secret("s1", "one")
	readOnB(b, "s1", "one")

	// A service account token from A is a credential at B.
	tr, err := a.Client.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.AnonymousClientConfig(b.Config)
	cfg.BearerToken = tr.Status.Token
	sa, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sa.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || r.Status.UserInfo.Username != "system:serviceaccount:default:default" {
		t.Fatalf("A's service account token at B: %v %+v", err, r)
	}

	// Rotation: a new key first in A's file, A restarted (it publishes the file), a secret
	// written under the new key, then B restarted: it takes the new file and reads it.
	encA := filepath.Join(a.DataDir, "encryption-config.yaml")
	old, err := os.ReadFile(encA)
	if err != nil {
		t.Fatal(err)
	}
	rotated := strings.Replace(string(old), "      - name: key1\n", "      - name: key2\n        secret: "+
		"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n      - name: key1\n", 1)
	if rotated == string(old) {
		t.Fatalf("unexpected default config layout:\n%s", old)
	}
	if err := os.WriteFile(encA, []byte(rotated), 0o600); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	a = apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep), apiservertest.WithDataDir(a.DataDir))
	secret("s2", "two")
	c, err := a.API.EtcdClient().Get(ctx, "/registry/secrets/default/s2")
	if err != nil || len(c.Kvs) != 1 || !bytes.HasPrefix(c.Kvs[0].Value, []byte("k8s:enc:aesgcm:v1:key2:")) {
		t.Fatalf("s2 is not stored under key2: %v", err)
	}
	b.Stop()
	b = apiservertest.Start(t, apiservertest.WithEtcdEndpoints(ep), apiservertest.WithDataDir(bDir))
	if got, _ := os.ReadFile(filepath.Join(bDir, "encryption-config.yaml")); string(got) != rotated {
		t.Fatalf("B did not take the rotated config:\n%s", got)
	}
	readOnB(b, "s2", "two")
	readOnB(b, "s1", "one")

	// A third server whose data dir already has an encryption config of its own (never
	// synced with the cluster) refuses to start rather than drop its key.
	cDir := dataDirWithKey(t, a)
	if err := os.WriteFile(filepath.Join(cDir, "encryption-config.yaml"), []byte(strings.Replace(string(old), "key1", "mine", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	_, err = apiserverNew(t, ep, cDir)
	if err == nil || !strings.Contains(err.Error(), "differs from the cluster's") || time.Now().After(deadline) {
		t.Fatalf("a server with its own encryption config: err = %v", err)
	}
}
