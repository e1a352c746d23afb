package apiserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/apiserver/encryption"
	"github.com/wasmkube/wasmkube/core/storage"
)

// The rotation documented in docs/security.md, step by step across restarts: add a new
// key first, rewrite every secret (kubectl replace), remove the old key. A secret written
// before encryption (plain JSON in etcd) is read, and encrypted by the rewrite.
func TestEncryptionKeyRotation(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "encryption-config.yaml")
	start := func() *apiservertest.Server { return apiservertest.Start(t, apiservertest.WithDataDir(dir)) }

	srv := start()
	k := newKubectl(t, srv)
	k.ok("create", "secret", "generic", "app", "--from-literal=token=first-secret-value")
	// An old, unencrypted value, as a data dir from before encryption holds it.
	plain := `{"kind":"Secret","apiVersion":"v1","metadata":{"name":"legacy","namespace":"default","uid":"u-legacy","creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"k":"bGVnYWN5LXZhbHVl"},"type":"Opaque"}`
	if _, err := srv.API.EtcdClient().Put(context.Background(), storage.Key("secrets", "default", "legacy"), plain); err != nil {
		t.Fatal(err)
	}
	if out := k.ok("get", "secret", "legacy", "-o", "jsonpath={.data.k}"); out != "bGVnYWN5LXZhbHVl" {
		t.Fatalf("unencrypted secret: %q", out)
	}
	srv.Stop()

	// Step 1: a new key, first; the old one stays to read.
	c, err := encryption.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	newKey, _ := encryption.NewKey()
	gcm := c.Resources[0].Providers[0].AESGCM
	if gcm == nil || len(gcm.Keys) != 1 || gcm.Keys[0].Name != "key1" {
		t.Fatalf("unexpected default config: %+v", c)
	}
	gcm.Keys = append([]encryption.Key{{Name: "key2", Secret: newKey}}, gcm.Keys...)
	writeConfig(t, cfgPath, c)
	srv = start()
	k = newKubectl(t, srv)
	prefix := func(name string) string {
		t.Helper()
		resp, err := srv.API.EtcdClient().Get(context.Background(), storage.Key("secrets", "default", name))
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("raw %s: %v", name, err)
		}
		v := resp.Kvs[0].Value
		if bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:")) {
			return string(v[:bytes.IndexByte(v[len("k8s:enc:aesgcm:v1:"):], ':')+len("k8s:enc:aesgcm:v1:")])
		}
		return "plain"
	}
	if p := prefix("app"); p != "k8s:enc:aesgcm:v1:key1" {
		t.Fatalf("before the rewrite: %s", p)
	}
	// Step 2: rewrite every secret.
	all := k.ok("get", "secrets", "-A", "-o", "json")
	replace := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "replace", "-f", "-")
	replace.Stdin = strings.NewReader(all)
	if out, err := replace.CombinedOutput(); err != nil {
		t.Fatalf("kubectl replace: %v\n%s", err, out)
	}
	for _, name := range []string{"app", "legacy"} {
		if p := prefix(name); p != "k8s:enc:aesgcm:v1:key2" {
			t.Fatalf("%s after the rewrite: %s", name, p)
		}
	}
	srv.Stop()

	// Step 3: the old key removed; everything still reads.
	if c, err = encryption.Load(cfgPath); err != nil {
		t.Fatal(err)
	}
	c.Resources[0].Providers[0].AESGCM.Keys = c.Resources[0].Providers[0].AESGCM.Keys[:1]
	writeConfig(t, cfgPath, c)
	srv = start()
	for name, want := range map[string]string{"app": "first-secret-value", "legacy": "legacy-value"} {
		s, err := srv.Client.CoreV1().Secrets("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || string(s.Data[map[string]string{"app": "token", "legacy": "k"}[name]]) != want {
			t.Fatalf("%s after removing the old key: %v %v", name, err, s)
		}
	}
	if _, err := srv.Client.CoreV1().Secrets("default").Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func writeConfig(t *testing.T, path string, c *encryption.Config) {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
