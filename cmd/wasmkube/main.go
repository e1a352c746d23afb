// Command wasmkube is the single binary: the API server, scheduler, controller manager,
// kubelet, the all-in-one `up`, and tools for plugin authors. Each subcommand lives in a
// file of its own in this folder and registers itself on rootCmd in an init function.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

var rootCmd = &cobra.Command{
	Use:           "wasmkube",
	Short:         "A Kubernetes-compatible control plane whose policies are WebAssembly modules",
	SilenceUsage:  true,
	SilenceErrors: true,
}

// signalContext is cancelled on SIGINT or SIGTERM, so every command stops cleanly.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func main() {
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "wasmkube:", err)
		os.Exit(1)
	}
}
