package apiserver

import (
	"path/filepath"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/wasmkube/wasmkube/core/apiserver/authn"
	"github.com/wasmkube/wasmkube/core/apiserver/encryption"
)

// EncryptionConfigFile is the default encryption config in the data dir.
const EncryptionConfigFile = authn.EncryptionConfigFile

// loadEncryption loads Options.EncryptionConfig, or the data dir's default (created on
// first start).
func loadEncryption(opts Options) (*encryption.Config, error) {
	if opts.EncryptionConfig != "" {
		return encryption.Load(opts.EncryptionConfig)
	}
	return encryption.LoadOrCreate(filepath.Join(opts.DataDir, EncryptionConfigFile))
}

// EtcdClient is the etcd client of the server's storage: tests read stored values with it
// (a secret's value is not plain text there), operators should not need it.
func (s *Server) EtcdClient() *clientv3.Client { return s.backend.Client() }
