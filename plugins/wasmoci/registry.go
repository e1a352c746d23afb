package wasmoci

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

// NewRegistry returns go-containerregistry's registry (pkg/registry) with its blobs in
// dataDir, for `wasmkube registry` and `up --registry`: enough to push modules to and pull
// them from on one machine, offline. Its manifests and tags live in memory: a restarted
// registry serves its blobs again but its tags must be pushed anew. logger nil: no logs.
func NewRegistry(dataDir string, logger *log.Logger) (http.Handler, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("registry data dir: %w", err)
	}
	opts := []registry.Option{registry.WithBlobHandler(registry.NewDiskBlobHandler(dataDir))}
	if logger == nil {
		logger = log.New(io.Discard, "", 0)
	}
	opts = append(opts, registry.Logger(logger))
	return registry.New(opts...), nil
}
