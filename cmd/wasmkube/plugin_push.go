package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmkube/wasmkube/plugins/wasmoci"
)

func init() {
	var (
		insecure   []string
		layout     string
		dockerCfg  string
		annotation []string
	)
	push := &cobra.Command{
		Use:   "push FILE.wasm REF",
		Short: "Push a wasm module to an OCI registry and print its reference by digest",
		Long: `push writes FILE.wasm to REF (REGISTRY/REPO:TAG) in the CNCF wasm layout: a config of media
type application/vnd.wasm.config.v0+json, one application/wasm layer, and the
org.opencontainers.image.title and .created annotations (created is the file's modification
time, so pushing the same file again gives the same digest). It prints REF@sha256:..., the
reference a WasmPolicy's module.image can pin. Registries on loopback are reached over plain
HTTP, others over verified TLS unless listed with --insecure. See docs/oci.md.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, stop := signalContext()
			defer stop()
			wasm, err := os.ReadFile(argv[0])
			if err != nil {
				return err
			}
			fi, err := os.Stat(argv[0])
			if err != nil {
				return err
			}
			o := wasmoci.PushOptions{Insecure: insecure, Layout: wasmoci.Layout(layout), Title: filepath.Base(argv[0]), Created: fi.ModTime()}
			if dockerCfg != "" {
				b, err := os.ReadFile(dockerCfg)
				if err != nil {
					return err
				}
				if o.Keychain, err = wasmoci.KeychainFromDockerConfig(b); err != nil {
					return fmt.Errorf("--docker-config %s: %w", dockerCfg, err)
				}
			}
			for _, a := range annotation {
				k, v, ok := strings.Cut(a, "=")
				if !ok {
					return fmt.Errorf("--annotation %q: want KEY=VALUE", a)
				}
				if o.Annotations == nil {
					o.Annotations = map[string]string{}
				}
				o.Annotations[k] = v
			}
			d, err := wasmoci.Push(ctx, wasm, argv[1], o)
			if err != nil {
				return err
			}
			ref := argv[1]
			if i := strings.LastIndex(ref, "@"); i >= 0 {
				ref = ref[:i]
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s@%s\n", ref, d.DigestStr())
			return nil
		},
	}
	f := push.Flags()
	f.StringSliceVar(&insecure, "insecure", nil, "registries (host:port) that may be reached over plain HTTP (loopback always may)")
	f.StringVar(&layout, "layout", string(wasmoci.LayoutCNCF), "manifest layout: cncf, or wasm-to-oci, istio, istio-compat (to test other hosts' readers)")
	f.StringVar(&dockerCfg, "docker-config", "", "docker config file with the registry's credentials (the content of a kubernetes.io/dockerconfigjson Secret)")
	f.StringArrayVar(&annotation, "annotation", nil, "extra manifest annotation KEY=VALUE (repeatable), e.g. org.opencontainers.image.source=...")
	pluginCmd.AddCommand(push)
}
