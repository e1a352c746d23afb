package encryption

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const key1 = "dGhlIGZpcnN0IGtleSwgdGhpcnR5LXR3byBieXRlcyE=" // 32 bytes
const key2 = "dGhlIG90aGVyIGtleSwgYWxzbyAzMiBieXRlcyBvayE=" // 32 bytes

func write(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "enc.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, providers string) *Transformer {
	t.Helper()
	c, err := Load(write(t, "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n"+providers))
	if err != nil {
		t.Fatal(err)
	}
	tr := c.For("secrets", "")
	if tr == nil || c.For("configmaps", "") != nil {
		t.Fatalf("For: secrets %v; configmaps must be plain", tr)
	}
	return tr
}

const etcdKey = "/registry/secrets/default/s"

func TestRotation(t *testing.T) {
	plain := []byte(`{"data":{"password":"aHVudGVyMg=="}}`)
	// Step 0: identity only (before encryption).
	t0 := load(t, "  - identity: {}\n")
	v0, _ := t0.TransformToStorage(etcdKey, plain)
	// Step 1: key1 writes, identity reads the old value (stale).
	t1 := load(t, "  - aesgcm: {keys: [{name: key1, secret: "+key1+"}]}\n  - identity: {}\n")
	if got, stale, err := t1.TransformFromStorage(etcdKey, v0); err != nil || !stale || !bytes.Equal(got, plain) {
		t.Fatalf("read plain with identity second: %q %v %v", got, stale, err)
	}
	v1, err := t1.TransformToStorage(etcdKey, plain)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(v1, []byte("k8s:enc:aesgcm:v1:key1:")) || bytes.Contains(v1, []byte("aHVudGVyMg")) {
		t.Fatalf("not sealed: %q", v1)
	}
	if got, stale, err := t1.TransformFromStorage(etcdKey, v1); err != nil || stale || !bytes.Equal(got, plain) {
		t.Fatalf("read own value: %q %v %v", got, stale, err)
	}
	// A sealed value moved to another key does not open (the key is additional data).
	if _, _, err := t1.TransformFromStorage("/registry/secrets/default/other", v1); err == nil {
		t.Fatal("value opened under another etcd key")
	}
	// Step 2: key2 added second (every server can read it), then first; key1 still reads, stale.
	t2 := load(t, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}, {name: key1, secret: "+key1+"}]}\n  - identity: {}\n")
	if got, stale, err := t2.TransformFromStorage(etcdKey, v1); err != nil || !stale || !bytes.Equal(got, plain) {
		t.Fatalf("read key1 value after rotation: %q %v %v", got, stale, err)
	}
	v2, _ := t2.TransformToStorage(etcdKey, plain)
	if !bytes.HasPrefix(v2, []byte("k8s:enc:aesgcm:v1:key2:")) {
		t.Fatalf("new key does not write: %q", v2)
	}
	// Step 3: key1 removed: its values no longer read, with an error naming the prefix.
	t3 := load(t, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}]}\n")
	if _, _, err := t3.TransformFromStorage(etcdKey, v1); err == nil || !strings.Contains(err.Error(), "k8s:enc:aesgcm:v1:key1") {
		t.Fatalf("removed key: %v", err)
	}
	if _, _, err := t3.TransformFromStorage(etcdKey, v0); err == nil || !strings.Contains(err.Error(), "identity") {
		t.Fatalf("plain value without identity: %v", err)
	}
	if got, _, err := t3.TransformFromStorage(etcdKey, v2); err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("read key2 value: %q %v", got, err)
	}
}

func TestSecretbox(t *testing.T) {
	tr := load(t, "  - secretbox: {keys: [{name: box, secret: "+key1+"}]}\n")
	v, err := tr.TransformToStorage(etcdKey, []byte("hello"))
	if err != nil || !bytes.HasPrefix(v, []byte("k8s:enc:secretbox:v1:box:")) {
		t.Fatalf("%q %v", v, err)
	}
	if got, _, err := tr.TransformFromStorage(etcdKey, v); err != nil || string(got) != "hello" {
		t.Fatalf("%q %v", got, err)
	}
	v[len(v)-1] ^= 1
	if _, _, err := tr.TransformFromStorage(etcdKey, v); err == nil {
		t.Fatal("tampered value opened")
	}
}

func TestBadConfigs(t *testing.T) {
	head := "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n"
	cases := map[string]string{
		"short key":     head + "  - aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}\n",
		"bad base64":    head + "  - aesgcm: {keys: [{name: k, secret: '%%%'}]}\n",
		"colon in name": head + "  - aesgcm: {keys: [{name: 'a:b', secret: " + key1 + "}]}\n",
		"duplicate":     head + "  - aesgcm: {keys: [{name: k, secret: " + key1 + "}, {name: k, secret: " + key2 + "}]}\n",
		"aescbc":        head + "  - aescbc: {keys: [{name: k, secret: " + key1 + "}]}\n",
		"two in one":    head + "  - {identity: {}, aesgcm: {keys: [{name: k, secret: " + key1 + "}]}}\n",
		"no providers":  "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n",
		"unknown field": head + "  - identity: {}\n    extra: 1\n",
		"wrong kind":    "apiVersion: v1\nkind: ConfigMap\n",
	}
	wants := map[string]string{
		"short key": "16, 24 or 32 bytes", "bad base64": "not base64", "colon in name": "no ':'", "duplicate": "duplicate key name",
		"aescbc": "not supported", "two in one": "exactly one provider", "no providers": "providers: Required", "unknown field": "unknown field",
		"wrong kind": "EncryptionConfiguration",
	}
	for name, body := range cases {
		if _, err := Load(write(t, body)); err == nil || !strings.Contains(err.Error(), wants[name]) {
			t.Errorf("%s: got %v, want an error with %q", name, err, wants[name])
		}
	}
}

func TestLoadOrCreateWritesAKeyOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "encryption-config.yaml")
	if _, err := LoadOrCreate(p); err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(p)
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	c, err := LoadOrCreate(p)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(p)
	if !bytes.Equal(first, again) || c.Resources[0].Providers[0].AESGCM == nil || c.Resources[0].Providers[1].Identity == nil {
		t.Fatalf("default config changed or wrong:\n%s", again)
	}
}
