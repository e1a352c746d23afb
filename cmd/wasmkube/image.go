package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	client "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/spf13/cobra"

	kcontainerd "github.com/wasmkube/wasmkube/kubelet/containerd"
	"github.com/wasmkube/wasmkube/kubelet/images"
)

func init() {
	imageCmd := &cobra.Command{Use: "image", Short: "Manage the kubelet's container images"}

	var address, ns, snapshotter string
	importCmd := &cobra.Command{
		Use:   "import FILE.tar...",
		Short: "Import OCI or Docker image archives into containerd",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			c, err := client.New(address)
			if err != nil {
				return fmt.Errorf("connect to containerd at %s: %w", address, err)
			}
			defer c.Close()
			ctx = namespaces.WithNamespace(ctx, ns)
			for _, a := range args {
				names, err := images.ImportFile(ctx, c, a, snapshotter)
				if err != nil {
					return err
				}
				fmt.Printf("imported %s\n", strings.Join(names, ", "))
			}
			return nil
		},
	}
	importCmd.Flags().StringVar(&address, "address", "/run/containerd/containerd.sock", "containerd socket")
	importCmd.Flags().StringVar(&ns, "namespace", "wasmkube", "containerd namespace (the kubelet uses one per node: its node name)")
	importCmd.Flags().StringVar(&snapshotter, "snapshotter", kcontainerd.SnapshotterOverlay, "snapshotter to unpack into")

	var busybox, pause, webhookServer, out string
	buildCmd := &cobra.Command{
		Use:    "build-builtin",
		Short:  "Build the busybox, pause and example webhook server OCI archives (used by `make images`)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return buildBuiltinImages(busybox, pause, webhookServer, out)
		},
	}
	buildCmd.Flags().StringVar(&busybox, "busybox", "/bin/busybox", "a statically linked busybox (Debian's busybox-static)")
	buildCmd.Flags().StringVar(&pause, "pause", "", "a statically linked pause binary")
	buildCmd.Flags().StringVar(&webhookServer, "webhook-server", "", "a statically linked examples/webhook-server binary (empty: no webhook-server.tar)")
	buildCmd.Flags().StringVar(&out, "out", "bin/images", "output directory")

	imageCmd.AddCommand(importCmd, buildCmd)
	rootCmd.AddCommand(imageCmd)
}

func buildBuiltinImages(busybox, pause, webhookServer, out string) error {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return fmt.Errorf("busybox: %w (install busybox-static)", err)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", busybox, err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	write := func(name, ref string, entries []images.Entry, entrypoint, cmd []string) error {
		path := filepath.Join(out, name)
		f, err := os.Create(path + ".tmp")
		if err != nil {
			return err
		}
		if err := images.BuildArchive(f, ref, entries, entrypoint, cmd); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Printf("built %s (%s)\n", path, ref)
		return os.Rename(path+".tmp", path)
	}
	if err := write("busybox.tar", images.BusyboxRef, images.BusyboxEntries(bb, strings.Fields(string(list))), nil, []string{"sh"}); err != nil {
		return err
	}
	if pause == "" {
		return fmt.Errorf("--pause: path of the pause binary is required")
	}
	pb, err := os.ReadFile(pause)
	if err != nil {
		return fmt.Errorf("pause binary: %w", err)
	}
	if err := write("pause.tar", images.PauseRef, images.PauseEntries(pb), []string{"/pause"}, nil); err != nil {
		return err
	}
	if webhookServer == "" {
		return nil
	}
	wb, err := os.ReadFile(webhookServer)
	if err != nil {
		return fmt.Errorf("webhook server binary: %w", err)
	}
	return write("webhook-server.tar", images.WebhookServerRef, images.BinaryEntries("webhook-server", wb), []string{"/webhook-server"}, nil)
}
