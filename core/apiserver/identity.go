package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
const identityResource = "wasmkube-identity"

var identityKey = storage.Key(identityResource, "", "cluster")

// sharedIdentity mirrors ca.crt, ca.key and tokens.json between etcd and the data dir.
type sharedIdentity struct {
	s       storage.Interface
	dataDir string
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

// sync makes the data dir hold the cluster's identity: the one in etcd if there is one,
// else the local one (created by create when missing), which is then published. Two
// servers starting at once agree because publishing is a create that only one wins.
func (si *sharedIdentity) sync(ctx context.Context, create func() error) error {
	for attempt := 0; attempt < 3; attempt++ {
		obj, err := si.s.Get(ctx, identityKey)
		if err == nil {
			return si.writeLocal(obj.(*corev1.Secret))
		}
		if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("read cluster identity from etcd: %w", err)
		}
		if err := create(); err != nil {
			return err
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}, Data: map[string][]byte{}}
		for name, path := range si.files() {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			sec.Data[name] = b
		}
		if _, err := si.s.Create(ctx, identityKey, sec); err == nil || !errors.Is(err, storage.ErrAlreadyExists) {
			return err
		}
	}
	return errors.New("publish cluster identity: too many concurrent starts")
}

func (si *sharedIdentity) writeLocal(sec *corev1.Secret) error {
	if err := os.MkdirAll(filepath.Join(si.dataDir, "pki"), 0o700); err != nil {
		return err
	}
	for name, path := range si.files() {
		data, ok := sec.Data[name]
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
	err = json.Unmarshal(obj.(*corev1.Secret).Data["tokens.json"], &tf)
	return tf, err
}

// addNodeToken publishes a node token issued by this server (a compare-and-swap, so
// tokens issued at once by several servers are all kept).
func (si *sharedIdentity) addNodeToken(ctx context.Context, node, token string) (string, error) {
	var winner string
	_, err := si.s.GuaranteedUpdate(ctx, identityKey, nil, func(cur runtime.Object) (runtime.Object, error) {
		sec := cur.(*corev1.Secret).DeepCopy()
		var tf tokenFile
		if err := json.Unmarshal(sec.Data["tokens.json"], &tf); err != nil {
			return nil, fmt.Errorf("cluster identity tokens: %w", err)
		}
		if tf.Nodes == nil {
			tf.Nodes = map[string]string{}
		}
		if t, ok := tf.Nodes[node]; ok {
			winner = t // another server issued one first: use it
			return sec, nil
		}
		tf.Nodes[node] = token
		winner = token
		b, err := json.MarshalIndent(tf, "", "  ")
		if err != nil {
			return nil, err
		}
		sec.Data["tokens.json"] = b
		return sec, nil
	})
	return winner, err
}

// refreshInterval bounds how often an unknown token makes the server re-read the shared
// tokens (a node may have joined through another server).
const refreshInterval = time.Second
