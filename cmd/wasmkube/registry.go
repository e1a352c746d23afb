package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
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
			addrs, err := startRegistry(ctx, dataDir, log, listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "registry listening on %s (blobs in %s)\n", addrs[0], dataDir)
			<-ctx.Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:5000", "address to serve the registry on (plain HTTP)")
	cmd.Flags().StringVar(&dataDir, "data-dir", "_registry", "directory of the registry's blobs")
	rootCmd.AddCommand(cmd)
}

// startRegistry serves one registry (one store: a tag pushed through one address is found
// through the others) on every address of listen until ctx ends, and returns the
// addresses it listens on.
func startRegistry(ctx context.Context, dataDir string, log *slog.Logger, listen ...string) ([]string, error) {
	h, err := wasmoci.NewRegistry(filepath.Clean(dataDir), slog.NewLogLogger(log.Handler(), slog.LevelDebug))
	if err != nil {
		return nil, err
	}
	var lns []net.Listener
	for _, l := range listen {
		ln, err := net.Listen("tcp", l)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return nil, fmt.Errorf("registry: %w", err)
		}
		lns = append(lns, ln)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var addrs []string
	for _, ln := range lns {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("registry stopped", "addr", ln.Addr().String(), "err", err)
			}
		}()
		addrs = append(addrs, ln.Addr().String())
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("registry serving", "addrs", addrs, "dataDir", dataDir)
	return addrs, nil
}

// registryOnHosts is where the hosts of `up --nodes N` reach a registry up serves on
// listen: the same port at gateway, the first host's address on the hosts' bridge. It is
// empty when listen already covers that address (an unspecified host such as 0.0.0.0).
func registryOnHosts(listen string, gateway netip.Addr) (string, error) {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("--registry %q: %w", listen, err)
	}
	if ip, err := netip.ParseAddr(host); err == nil && (ip.IsUnspecified() || ip == gateway) {
		return "", nil
	}
	return net.JoinHostPort(gateway.String(), port), nil
}

// moduleCache is how a component fetches and keeps the modules of WasmPolicies: cached
// under dir (empty: file modules only), over plain HTTP from the insecure registries
// (--insecure-registry) and loopback ones, over verified TLS from every other.
func moduleCache(dir string, insecure []string) wasmoci.Options {
	return wasmoci.Options{Dir: dir, Insecure: insecure}
}
