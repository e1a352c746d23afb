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

// refuseUnknownSubcommands makes every command that only groups others (plugin, bench,
// image, explain) an error when called with an unknown verb: cobra would print the help and
// exit 0, so a typo in a script would pass silently. Called without a verb, they print help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Run != nil || c.RunE != nil {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return cmd.Help()
	}
}

func main() {
	refuseUnknownSubcommands(rootCmd)
	if err := rootCmd.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "wasmkube:", err)
		os.Exit(1)
	}
}
