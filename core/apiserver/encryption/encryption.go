// Package encryption is encryption at rest for the API server's storage, configured as
// upstream's EncryptionConfiguration (apiserver.config.k8s.io/v1): per resource, a list of
// providers whose first writes and all of which read. Providers: aesgcm and secretbox
// (stored as k8s:enc:aesgcm:v1:KEYNAME: / k8s:enc:secretbox:v1:KEYNAME: followed by the
// nonce and the sealed value, the byte layout of upstream's transformers, so an etcd
// written by one can be read by the other given the same keys) and identity (plain). See
// docs/security.md for the default file and key rotation.
package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/nacl/secretbox"
	"sigs.k8s.io/yaml"
)

// Config is the file format: upstream's EncryptionConfiguration, the providers wasmkube
// implements.
type Config struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Resources  []ResourceConfig `json:"resources"`
}

// ResourceConfig names resources ("secrets", "deployments.apps", "*.*") and their providers.
type ResourceConfig struct {
	Resources []string         `json:"resources"`
	Providers []ProviderConfig `json:"providers"`
}

// ProviderConfig is one provider; exactly one field is set.
type ProviderConfig struct {
	AESGCM    *KeysConfig `json:"aesgcm,omitempty"`
	Secretbox *KeysConfig `json:"secretbox,omitempty"`
	Identity  *struct{}   `json:"identity,omitempty"`
	// Upstream's other providers, refused with a clear error.
	AESCBC *KeysConfig `json:"aescbc,omitempty"`
	KMS    any         `json:"kms,omitempty"`
}

// KeysConfig lists keys, the first of which encrypts.
type KeysConfig struct {
	Keys []Key `json:"keys"`
}

// Key is a named key, base64 in Secret.
type Key struct {
	Name   string `json:"name"`
	Secret string `json:"secret"`
}

const (
	apiVersion = "apiserver.config.k8s.io/v1"
	kind       = "EncryptionConfiguration"
)

// Load reads and checks a configuration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("encryption config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	if _, err := c.transformers(); err != nil {
		return nil, fmt.Errorf("encryption config %s: %w", path, err)
	}
	return &c, nil
}

// LoadOrCreate loads path, or when it does not exist writes the default there first: a
// fresh 32-byte AES-GCM key for secrets, then identity so values written before
// encryption still read (k3s does the same with its --secrets-encryption).
func LoadOrCreate(path string) (*Config, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := writeDefault(path); err != nil {
			return nil, err
		}
	}
	return Load(path)
}

// NewKey returns a fresh base64 32-byte key, for a config file's secret.
func NewKey() (string, error) {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

func writeDefault(path string) error {
	key, err := NewKey()
	if err != nil {
		return err
	}
	c := Config{APIVersion: apiVersion, Kind: kind, Resources: []ResourceConfig{{
		Resources: []string{"secrets"},
		Providers: []ProviderConfig{{AESGCM: &KeysConfig{Keys: []Key{{Name: "key1", Secret: key}}}}, {Identity: &struct{}{}}},
	}}}
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	header := "# Encryption at rest of the API server's storage (upstream's EncryptionConfiguration).\n" +
		"# Rotate a key: docs/security.md. Losing this file makes the secrets in etcd unreadable.\n"
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append([]byte(header), b...), 0o600); err != nil {
		return fmt.Errorf("encryption config: %w", err)
	}
	return os.Rename(tmp, path)
}

// For returns the transformer of a resource ("secrets"; group-qualified for other groups:
// "deployments.apps"), or nil when the resource is stored plain.
func (c *Config) For(resource, group string) *Transformer {
	ts, _ := c.transformers()
	name := resource
	if group != "" {
		name += "." + group
	}
	for i, rc := range c.Resources {
		for _, r := range rc.Resources {
			if r == name || r == resource+"." && group == "" || r == "*.*" || group != "" && r == "*."+group || group == "" && r == "*." {
				return ts[i]
			}
		}
	}
	return nil
}

func (c *Config) transformers() ([]*Transformer, error) {
	if c.APIVersion != apiVersion || c.Kind != kind {
		return nil, fmt.Errorf("apiVersion/kind: want %s %s, got %q %q", apiVersion, kind, c.APIVersion, c.Kind)
	}
	var out []*Transformer
	for i, rc := range c.Resources {
		path := fmt.Sprintf("resources[%d]", i)
		if len(rc.Resources) == 0 {
			return nil, fmt.Errorf("%s.resources: Required value", path)
		}
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("%s.providers: Required value", path)
		}
		t := &Transformer{}
		for j, p := range rc.Providers {
			ps, err := newProviders(p, fmt.Sprintf("%s.providers[%d]", path, j))
			if err != nil {
				return nil, err
			}
			t.readers = append(t.readers, ps...)
		}
		out = append(out, t)
	}
	return out, nil
}

// provider reads and writes one form: a key of aesgcm or secretbox, or identity.
type provider struct {
	prefix []byte // empty for identity
	seal   func(key string, plain []byte) ([]byte, error)
	open   func(key string, sealed []byte) ([]byte, error)
}

func newProviders(p ProviderConfig, path string) ([]provider, error) {
	n := 0
	for _, set := range []bool{p.AESGCM != nil, p.Secretbox != nil, p.Identity != nil, p.AESCBC != nil, p.KMS != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("%s: exactly one provider must be set (aesgcm, secretbox or identity)", path)
	}
	switch {
	case p.AESCBC != nil:
		return nil, fmt.Errorf("%s.aescbc: not supported by wasmkube: use aesgcm or secretbox", path)
	case p.KMS != nil:
		return nil, fmt.Errorf("%s.kms: not supported by wasmkube: use aesgcm or secretbox", path)
	case p.Identity != nil:
		return []provider{{
			seal: func(_ string, plain []byte) ([]byte, error) { return plain, nil },
			open: func(_ string, data []byte) ([]byte, error) { return data, nil },
		}}, nil
	}
	name, keys := "aesgcm", p.AESGCM
	if p.Secretbox != nil {
		name, keys = "secretbox", p.Secretbox
	}
	if len(keys.Keys) == 0 {
		return nil, fmt.Errorf("%s.%s.keys: Required value", path, name)
	}
	seen := map[string]bool{}
	var out []provider
	for i, k := range keys.Keys {
		kp := fmt.Sprintf("%s.%s.keys[%d]", path, name, i)
		if k.Name == "" || strings.Contains(k.Name, ":") {
			return nil, fmt.Errorf("%s.name: %q must be non-empty and contain no ':'", kp, k.Name)
		}
		if seen[k.Name] {
			return nil, fmt.Errorf("%s.name: duplicate key name %q", kp, k.Name)
		}
		seen[k.Name] = true
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s.secret: not base64: %v", kp, err)
		}
		pr := provider{prefix: []byte("k8s:enc:" + name + ":v1:" + k.Name + ":")}
		if name == "aesgcm" {
			if len(secret) != 16 && len(secret) != 24 && len(secret) != 32 {
				return nil, fmt.Errorf("%s.secret: an AES key is 16, 24 or 32 bytes, got %d", kp, len(secret))
			}
			block, _ := aes.NewCipher(secret)
			aead, err := cipher.NewGCM(block)
			if err != nil {
				return nil, err
			}
			pr.seal, pr.open = gcmSeal(aead), gcmOpen(aead)
		} else {
			if len(secret) != 32 {
				return nil, fmt.Errorf("%s.secret: a secretbox key is 32 bytes, got %d", kp, len(secret))
			}
			var key [32]byte
			copy(key[:], secret)
			pr.seal, pr.open = boxSeal(&key), boxOpen(&key)
		}
		out = append(out, pr)
	}
	return out, nil
}

// AES-GCM as upstream: a random 12-byte nonce, then the sealed value, with the etcd key
// as additional data (a value copied to another key does not open).
func gcmSeal(aead cipher.AEAD) func(string, []byte) ([]byte, error) {
	return func(key string, plain []byte) ([]byte, error) {
		ns := aead.NonceSize()
		out := make([]byte, ns, ns+len(plain)+aead.Overhead())
		if _, err := rand.Read(out); err != nil {
			return nil, err
		}
		return aead.Seal(out, out[:ns], plain, []byte(key)), nil
	}
}

func gcmOpen(aead cipher.AEAD) func(string, []byte) ([]byte, error) {
	return func(key string, data []byte) ([]byte, error) {
		ns := aead.NonceSize()
		if len(data) < ns {
			return nil, errors.New("the value is shorter than a nonce")
		}
		return aead.Open(nil, data[:ns], data[ns:], []byte(key))
	}
}

// secretbox as upstream: a random 24-byte nonce, then the box.
func boxSeal(k *[32]byte) func(string, []byte) ([]byte, error) {
	return func(_ string, plain []byte) ([]byte, error) {
		var nonce [24]byte
		if _, err := rand.Read(nonce[:]); err != nil {
			return nil, err
		}
		return secretbox.Seal(nonce[:], plain, &nonce, k), nil
	}
}

func boxOpen(k *[32]byte) func(string, []byte) ([]byte, error) {
	return func(_ string, data []byte) ([]byte, error) {
		if len(data) < 24 {
			return nil, errors.New("the value is shorter than a nonce")
		}
		var nonce [24]byte
		copy(nonce[:], data)
		out, ok := secretbox.Open(nil, data[24:], &nonce, k)
		if !ok {
			return nil, errors.New("secretbox: message authentication failed")
		}
		return out, nil
	}
}

// Transformer is one resource's providers; it implements storage.Transformer.
type Transformer struct {
	readers []provider // readers[0] writes
}

// TransformToStorage seals with the first provider.
func (t *Transformer) TransformToStorage(key string, plain []byte) ([]byte, error) {
	w := t.readers[0]
	out, err := w.seal(key, plain)
	if err != nil {
		return nil, err
	}
	if len(w.prefix) == 0 {
		return out, nil
	}
	return append(append(make([]byte, 0, len(w.prefix)+len(out)), w.prefix...), out...), nil
}

// TransformFromStorage opens data with the provider its prefix names; a value with no
// known prefix is read by identity if listed. stale: not written by the first provider.
func (t *Transformer) TransformFromStorage(key string, data []byte) ([]byte, bool, error) {
	for i, r := range t.readers {
		if len(r.prefix) == 0 || !bytes.HasPrefix(data, r.prefix) {
			continue
		}
		plain, err := r.open(key, data[len(r.prefix):])
		if err != nil {
			return nil, false, fmt.Errorf("decrypt with %s: %w", strings.TrimSuffix(string(r.prefix), ":"), err)
		}
		return plain, i != 0, nil
	}
	for i, r := range t.readers {
		if len(r.prefix) == 0 {
			return data, i != 0, nil
		}
	}
	if bytes.HasPrefix(data, []byte("k8s:enc:")) {
		return nil, false, fmt.Errorf("no key in the encryption config matches the stored value's prefix %q", prefixOf(data))
	}
	return nil, false, errors.New("the value is not encrypted and the encryption config lists no identity provider")
}

// prefixOf returns k8s:enc:NAME:v1:KEY of a value, for errors.
func prefixOf(data []byte) string {
	parts := bytes.SplitN(data, []byte(":"), 6)
	if len(parts) < 6 {
		return "k8s:enc:"
	}
	return string(bytes.Join(parts[:5], []byte(":")))
}
