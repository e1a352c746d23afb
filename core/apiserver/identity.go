package apiserver

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/storage"
)

// On an external etcd cluster several API servers serve the same cluster, so the cluster's
// identity (the CA and every token) lives in etcd, under a key no API resource exposes,
// and each server mirrors it into its data dir. On the embedded etcd the data dir alone
// is the source of truth.
//
// In etcd the identity is sealed with AES-256-GCM under a key kept in each server's data
// dir (identityKeyFile), never in etcd: reading etcd (a backup, a snapshot, a client with
// etcd credentials) does not yield the CA key or any token. Every server of a cluster
// needs the same key file (docs/security.md). Records written before the encryption (the
// files as plain Secret data) are read and sealed on the next write.
const identityResource = "wasmkube-identity"

var identityKey = storage.Key(identityResource, "", "cluster")

const (
	// identityKeyFile holds the sealing key, base64, in the data dir.
	identityKeyFile = "identity.key"
	// sealedType marks a sealed record: Data["keyID"] names the key, Data["sealed"] is
	// nonce || AES-GCM(JSON of the files).
	sealedType = corev1.SecretType("wasmkube.io/identity-aes-gcm-v1")
)

// sharedIdentity mirrors ca.crt, ca.key and tokens.json between etcd and the data dir.
type sharedIdentity struct {
	s       storage.Interface
	dataDir string
	aead    cipher.AEAD
	keyID   string
}

func newSharedIdentity(b *storage.Backend, dataDir string) *sharedIdentity {
	return &sharedIdentity{
		s:       b.ForResource(identityResource, func() runtime.Object { return &corev1.Secret{} }, func() runtime.Object { return &corev1.SecretList{} }),
		dataDir: dataDir,
	}
}

func (si *sharedIdentity) files() map[string]string {
	return map[string]string{
		"ca.crt":      filepath.Join(si.dataDir, "pki", "ca.crt"),
		"ca.key":      filepath.Join(si.dataDir, "pki", "ca.key"),
		"tokens.json": filepath.Join(si.dataDir, tokensFileName),
	}
}

func (si *sharedIdentity) keyPath() string { return filepath.Join(si.dataDir, identityKeyFile) }

// loadKey reads the sealing key; when there is none and create is set it makes one.
func (si *sharedIdentity) loadKey(create bool) error {
	b, err := os.ReadFile(si.keyPath())
	if errors.Is(err, os.ErrNotExist) && create {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		b = []byte(base64.StdEncoding.EncodeToString(key) + "\n")
		if err := writeFileAtomic(si.keyPath(), b, 0o600); err != nil {
			return err
		}
	} else if err != nil {
		return fmt.Errorf("read identity key: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != 32 {
		return fmt.Errorf("%s: want 32 bytes, base64-encoded", si.keyPath())
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return err
	}
	if si.aead, err = cipher.NewGCM(block); err != nil {
		return err
	}
	sum := sha256.Sum256(key)
	si.keyID = hex.EncodeToString(sum[:8])
	return nil
}

// seal turns the identity files into the record stored in etcd.
func (si *sharedIdentity) seal(files map[string][]byte) (*corev1.Secret, error) {
	plain, err := json.Marshal(files)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, si.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	sealed := si.aead.Seal(nonce, nonce, plain, []byte(identityKey))
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Type: sealedType,
		Data: map[string][]byte{"keyID": []byte(si.keyID), "sealed": sealed}}, nil
}

// open returns the identity files of a record, sealed or (from before the encryption)
// plain.
func (si *sharedIdentity) open(sec *corev1.Secret) (map[string][]byte, error) {
	if sec.Type != sealedType {
		return sec.Data, nil
	}
	if si.aead == nil {
		return nil, si.wrongKey()
	}
	if string(sec.Data["keyID"]) != si.keyID {
		return nil, si.wrongKey()
	}
	box := sec.Data["sealed"]
	if len(box) < si.aead.NonceSize() {
		return nil, errors.New("cluster identity in etcd: sealed record too short")
	}
	plain, err := si.aead.Open(nil, box[:si.aead.NonceSize()], box[si.aead.NonceSize():], []byte(identityKey))
	if err != nil {
		return nil, fmt.Errorf("cluster identity in etcd: cannot open it with %s: %w", si.keyPath(), err)
	}
	files := map[string][]byte{}
	if err := json.Unmarshal(plain, &files); err != nil {
		return nil, fmt.Errorf("cluster identity in etcd: %w", err)
	}
	return files, nil
}

func (si *sharedIdentity) wrongKey() error {
	return fmt.Errorf("the cluster identity in etcd is sealed with a key this server does not have: copy %s from a server of this cluster into this server's data dir (same path) and start again", identityKeyFile)
}

// sync makes the data dir hold the cluster's identity: the one in etcd if there is one,
// else the local one (created by create when missing), which is then published. Two
// servers starting at once agree because publishing is a create that only one wins. A
// plain record (written before the encryption) is sealed in place.
func (si *sharedIdentity) sync(ctx context.Context, create func() error) error {
	for attempt := 0; attempt < 3; attempt++ {
		obj, err := si.s.Get(ctx, identityKey)
		if err == nil {
			sec := obj.(*corev1.Secret)
			if err := si.loadKey(sec.Type != sealedType); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return si.wrongKey()
				}
				return err
			}
			files, err := si.open(sec)
			if err != nil {
				return err
			}
			if err := si.writeLocal(files); err != nil {
				return err
			}
			if sec.Type != sealedType {
				return si.sealInPlace(ctx)
			}
			return nil
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read cluster identity from etcd: %w", err)
		}
		if err := si.loadKey(true); err != nil {
			return err
		}
		if err := create(); err != nil {
			return err
		}
		files := map[string][]byte{}
		for name, path := range si.files() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files[name] = b
		}
		sec, err := si.seal(files)
		if err != nil {
			return err
		}
		if _, err := si.s.Create(ctx, identityKey, sec); err == nil || !errors.Is(err, storage.ErrAlreadyExists) {
			return err
		}
	}
	return errors.New("publish cluster identity: too many concurrent starts")
}

// sealInPlace rewrites a plain record sealed (a no-op when another server did already).
func (si *sharedIdentity) sealInPlace(ctx context.Context) error {
	_, err := si.s.GuaranteedUpdate(ctx, identityKey, nil, func(cur runtime.Object) (runtime.Object, error) {
		sec := cur.(*corev1.Secret)
		if sec.Type == sealedType {
			return sec, nil
		}
		return si.seal(sec.Data)
	})
	if err != nil {
		return fmt.Errorf("seal the cluster identity in etcd: %w", err)
	}
	return nil
}

func (si *sharedIdentity) writeLocal(files map[string][]byte) error {
	if err := os.MkdirAll(filepath.Join(si.dataDir, "pki"), 0o700); err != nil {
		return err
	}
	for name, path := range si.files() {
		data, ok := files[name]
		if !ok {
			return fmt.Errorf("cluster identity in etcd lacks %s", name)
		}
		if cur, err := os.ReadFile(path); err == nil && string(cur) == string(data) {
			continue
		}
		if err := writeFileAtomic(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tokens reads the shared token file.
func (si *sharedIdentity) tokens(ctx context.Context) (tokenFile, error) {
	var tf tokenFile
	obj, err := si.s.Get(ctx, identityKey)
	if err != nil {
		return tf, err
	}
	files, err := si.open(obj.(*corev1.Secret))
	if err != nil {
		return tf, err
	}
	err = json.Unmarshal(files["tokens.json"], &tf)
	return tf, err
}

// updateTokens applies fn to the shared token file (a compare-and-swap: changes made at
// once by several servers are all kept; fn may run more than once) and returns the
// result.
func (si *sharedIdentity) updateTokens(ctx context.Context, fn func(*tokenFile) error) (tokenFile, error) {
	var out tokenFile
	_, err := si.s.GuaranteedUpdate(ctx, identityKey, nil, func(cur runtime.Object) (runtime.Object, error) {
		files, err := si.open(cur.(*corev1.Secret))
		if err != nil {
			return nil, err
		}
		var tf tokenFile
		if err := json.Unmarshal(files["tokens.json"], &tf); err != nil {
			return nil, fmt.Errorf("cluster identity tokens: %w", err)
		}
		if err := fn(&tf); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(tf, "", "  ")
		if err != nil {
			return nil, err
		}
		next := make(map[string][]byte, len(files))
		for k, v := range files {
			next[k] = v
		}
		next["tokens.json"] = b
		out = tf
		return si.seal(next)
	})
	return out, err
}

// refreshInterval bounds how often an unknown token makes the server re-read the shared
// tokens (a node may have joined through another server).
const refreshInterval = time.Second

// sharedResyncInterval is how often a server re-reads the shared credentials, so a
// revocation or rotation made through another server takes effect here too.
const sharedResyncInterval = 10 * time.Second
