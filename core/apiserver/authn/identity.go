package authn

import (
	"bytes"
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
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/encryption"
	"github.com/wasmkube/wasmkube/core/apiserver/serviceaccount"
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

// SharedIdentity mirrors ca.crt, ca.key, tokens.json, the service account signing key
// (pki/sa.key) and, unless the server was given --encryption-provider-config, the default
// encryption-config.yaml between etcd and the data dir, so that every API server of the
// cluster signs and accepts the same service account tokens and reads the others'
// Secrets.
type SharedIdentity struct {
	s       storage.Interface
	dataDir string
	aead    cipher.AEAD
	keyID   string
	// shareEncryption: the data dir's default encryption-config.yaml is the cluster's.
	shareEncryption bool
}

// encryptionConfigFile is the default encryption config in the data dir;
// serviceAccountKeyFile the token signing key, under the data dir's pki/.
const (
	EncryptionConfigFile  = "encryption-config.yaml"
	ServiceAccountKeyFile = "sa.key"
)

func NewSharedIdentity(b *storage.Backend, dataDir string, shareEncryption bool) *SharedIdentity {
	return &SharedIdentity{
		s:       b.ForResource(identityResource, func() runtime.Object { return &corev1.Secret{} }, func() runtime.Object { return &corev1.SecretList{} }),
		dataDir: dataDir, shareEncryption: shareEncryption,
	}
}

// Names of the files added to the record after the first version: a record without them
// (written by an older server) gets them from the first server of this version that
// starts on it.
const (
	saKeyName      = "sa.key"
	encryptionName = EncryptionConfigFile
)

func (si *SharedIdentity) files() map[string]string {
	f := map[string]string{
		"ca.crt":      filepath.Join(si.dataDir, "pki", "ca.crt"),
		"ca.key":      filepath.Join(si.dataDir, "pki", "ca.key"),
		"tokens.json": filepath.Join(si.dataDir, tokensFileName),
		saKeyName:     filepath.Join(si.dataDir, "pki", ServiceAccountKeyFile),
	}
	if si.shareEncryption {
		f[encryptionName] = filepath.Join(si.dataDir, EncryptionConfigFile)
	}
	return f
}

// createLate makes the local file of a name added after the first version, when missing.
func (si *SharedIdentity) createLate(name string) error {
	path := si.files()[name]
	if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return err
	}
	switch name {
	case saKeyName:
		_, err := serviceaccount.LoadOrCreate(path, serviceaccount.DefaultIssuer)
		return err
	case encryptionName:
		_, err := encryption.LoadOrCreate(path)
		return err
	}
	return nil
}

// markerPath holds the sha256 of the encryption config last mirrored from or published to
// etcd: a local file that no longer matches it was edited here (a key rotation) and is
// published; one that matches it is only stale and takes the cluster's.
func (si *SharedIdentity) markerPath() string {
	return filepath.Join(si.dataDir, EncryptionConfigFile+".synced")
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// reconcileLate brings the record and the data dir to agree on the late files: a file
// the record lacks is published from here (created first when missing); a local
// encryption config edited since the last sync is published; one that differs from the
// cluster's without ever having been synced is an error (the secrets this server wrote
// under its own key would be lost by taking the cluster's). It returns the files to
// mirror locally.
func (si *SharedIdentity) reconcileLate(ctx context.Context, files map[string][]byte) (map[string][]byte, error) {
	publish := map[string][]byte{}
	seen := map[string][]byte{}
	for _, name := range []string{saKeyName, encryptionName} {
		path, ok := si.files()[name]
		if !ok {
			continue
		}
		rec, inRec := files[name]
		if !inRec {
			if err := si.createLate(name); err != nil {
				return nil, err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			publish[name] = b
			continue
		}
		local, err := os.ReadFile(path)
		if err != nil || bytes.Equal(local, rec) || name != encryptionName {
			continue // missing or equal here, or the cluster's sa.key wins
		}
		marker, _ := os.ReadFile(si.markerPath())
		switch strings.TrimSpace(string(marker)) {
		case "":
			return nil, fmt.Errorf("%s differs from the cluster's (in etcd) and was never synced with it: "+
				"secrets written through this server may be sealed with its own key. Merge the files (the cluster's "+
				"providers and keys first, this file's keys after them), then remove %s to take the merged "+
				"cluster file from a server that has it, or put the merged file in every server's data dir and "+
				"write its sha256 into %s (docs/security.md)", path, path, si.markerPath())
		case sum(local):
			// stale here: another server rotated the keys; take the cluster's
		default:
			publish[name], seen[name] = local, rec // edited here since the last sync: a rotation
		}
	}
	if len(publish) == 0 {
		return files, nil
	}
	out, err := si.s.GuaranteedUpdate(ctx, identityKey, nil, func(cur runtime.Object) (runtime.Object, error) {
		cf, err := si.open(cur.(*corev1.Secret))
		if err != nil {
			return nil, err
		}
		next := make(map[string][]byte, len(cf)+len(publish))
		for k, v := range cf {
			next[k] = v
		}
		for name, b := range publish {
			old, there := cf[name]
			// Another server may have published first: its file wins unless ours
			// replaces exactly the version we saw.
			if !there || (seen[name] != nil && bytes.Equal(old, seen[name])) {
				next[name] = b
			}
		}
		return si.seal(next)
	})
	if err != nil {
		return nil, fmt.Errorf("publish %s to the cluster identity in etcd: %w", strings.Join(keysOf(publish), ", "), err)
	}
	return si.open(out.(*corev1.Secret))
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeMarker records the encryption config now mirrored locally.
func (si *SharedIdentity) writeMarker(files map[string][]byte) error {
	if b, ok := files[encryptionName]; ok && si.shareEncryption {
		return WriteFileAtomic(si.markerPath(), []byte(sum(b)+"\n"), 0o600)
	}
	return nil
}

func (si *SharedIdentity) keyPath() string { return filepath.Join(si.dataDir, identityKeyFile) }

// loadKey reads the sealing key; when there is none and create is set it makes one.
func (si *SharedIdentity) loadKey(create bool) error {
	b, err := os.ReadFile(si.keyPath())
	if errors.Is(err, os.ErrNotExist) && create {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		b = []byte(base64.StdEncoding.EncodeToString(key) + "\n")
		if err := WriteFileAtomic(si.keyPath(), b, 0o600); err != nil {
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
func (si *SharedIdentity) seal(files map[string][]byte) (*corev1.Secret, error) {
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
func (si *SharedIdentity) open(sec *corev1.Secret) (map[string][]byte, error) {
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

func (si *SharedIdentity) wrongKey() error {
	return fmt.Errorf("the cluster identity in etcd is sealed with a key this server does not have: copy %s from a server of this cluster into this server's data dir (same path) and start again", identityKeyFile)
}

// Sync makes the data dir hold the cluster's identity: the one in etcd if there is one,
// else the local one (created by create when missing), which is then published. Two
// servers starting at once agree because publishing is a create that only one wins. A
// plain record (written before the encryption) is sealed in place.
func (si *SharedIdentity) Sync(ctx context.Context, create func() error) error {
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
			if files, err = si.reconcileLate(ctx, files); err != nil {
				return err
			}
			if err := si.writeLocal(files); err != nil {
				return err
			}
			if err := si.writeMarker(files); err != nil {
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
		for _, name := range []string{saKeyName, encryptionName} {
			if err := si.createLate(name); err != nil {
				return err
			}
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
			if err == nil {
				err = si.writeMarker(files)
			}
			return err
		}
	}
	return errors.New("publish cluster identity: too many concurrent starts")
}

// sealInPlace rewrites a plain record sealed (a no-op when another server did already).
func (si *SharedIdentity) sealInPlace(ctx context.Context) error {
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

func (si *SharedIdentity) writeLocal(files map[string][]byte) error {
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
		if err := WriteFileAtomic(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tokens reads the shared token file.
func (si *SharedIdentity) tokens(ctx context.Context) (tokenFile, error) {
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
func (si *SharedIdentity) updateTokens(ctx context.Context, fn func(*tokenFile) error) (tokenFile, error) {
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

// SharedResyncInterval is how often a server re-reads the shared credentials, so a
// revocation or rotation made through another server takes effect here too.
const SharedResyncInterval = 10 * time.Second
