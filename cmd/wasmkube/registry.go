package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

func init() {
	var listen, dataDir string
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Serve a small OCI registry for wasm modules (blobs on disk), for offline clusters and tests",
		Long: `registry serves go-containerregistry's registry (the OCI distribution API) on --listen with
its blobs under --data-dir, so that 'wasmkube plugin push' and WasmPolicy modules work without
any registry outside the machine. It speaks plain HTTP: clients reach it over plain HTTP only on
loopback, or when it is listed as insecure. Manifests and tags are kept in memory: after a
restart the blobs are still there, but the modules must be pushed again to be found by tag.
See docs/oci.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			log := slog.New(slog.NewTextHandler(os.Stderr, nil))
			addr, err := startRegistry(ctx, listen, dataDir, log)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry listening on %s (blobs in %s)\n", addr, dataDir)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:5000", "address to serve the registry on (plain HTTP)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "_registry", "directory of the registry's blobs")
	rootCmd.AddCommand(cmd)
}

// startRegistry serves a registry on listen until ctx ends and returns the address it
// listens on.
func startRegistry(ctx context.Context, listen, dataDir string, log *slog.Logger) (string, error) {
	h, err := wasmoci.NewRegistry(filepath.Clean(dataDir), slog.NewLogLogger(log.Handler(), slog.LevelDebug))
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return "", fmt.Errorf("registry: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("registry stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("registry serving", "addr", ln.Addr().String(), "dataDir", dataDir)
	return ln.Addr().String(), nil
}
