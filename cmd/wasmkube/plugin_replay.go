package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

func init() {
	var kubeconfig, output string
	var cycles int
	var duration time.Duration
	record := &cobra.Command{
		Use:   "record --kubeconfig FILE -o RECORDING.jsonl",
		Short: "Record a running cluster's scheduling decisions (and the nodes and pods they were made against)",
		Long: `record watches nodes and pods through the API server and writes the cluster's scheduling
history as JSON Lines: the nodes, the pods already bound, and every scheduling decision (the
pod before it was bound and the node it went to), until --cycles decisions, --duration, or
Ctrl-C. 'plugin replay' rebuilds that history offline and asks a candidate config where each
pod would have gone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" || output == "" {
				return errors.New("--kubeconfig and -o/--output are required")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			f, err := os.Create(output)
			if err != nil {
				return err
			}
			defer f.Close()
			ctx, cancel := signalContext()
			defer cancel()
			if duration > 0 {
				ctx, cancel = context.WithTimeout(ctx, duration)
				defer cancel()
			}
			ready := make(chan struct{})
			go func() {
				select {
				case <-ready:
					fmt.Fprintf(cmd.ErrOrStderr(), "recording to %s (Ctrl-C to stop)\n", output)
				case <-ctx.Done():
				}
			}()
			n, err := wasmtest.RecordCluster(ctx, client, f, wasmtest.RecordOptions{Cycles: cycles, Ready: ready})
			fmt.Fprintf(cmd.OutOrStdout(), "recorded %d scheduling decisions to %s\n", n, output)
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return f.Close()
		},
	}
	rf := record.Flags()
	rf.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the cluster (required)")
	rf.StringVarP(&output, "output", "o", "", "recording file to write (required)")
	rf.IntVar(&cycles, "cycles", 0, "stop after this many decisions (0: until --duration or Ctrl-C)")
	rf.DurationVar(&duration, "duration", 0, "stop after this long (0: until --cycles or Ctrl-C)")
	pluginCmd.AddCommand(record)

	ro := &replayOptions{}
	replay := &cobra.Command{
		Use:   "replay RECORDING.jsonl --config CANDIDATE.yaml [--baseline CURRENT.yaml]",
		Short: "Replay a recording against a candidate scheduler config and print what would change",
		Long: `replay rebuilds the recorded cluster offline and, before each recorded decision, asks the
candidate config (its scheduler: section, wasm plugins included) where the pod would go,
scoring every node. With --baseline it compares with a replay of the baseline config on the
same history (and says how well the baseline reproduces the recording); without, with the
recorded decisions themselves. It counts pods that would land on the same node (or a tie),
on another node, or nowhere, and prints examples.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginReplay(ctx, cmd.OutOrStdout(), argv[0], ro)
		},
	}
	pf := replay.Flags()
	pf.StringVar(&ro.config, "config", "", "the candidate wasmkube config file (required)")
	pf.StringVar(&ro.baseline, "baseline", "", "a baseline config to compare with instead of the recorded decisions")
	pf.StringVar(&ro.profile, "profile", "", "scheduler profile (default: the config's first)")
	pf.StringVarP(&ro.output, "output", "o", "text", "text or json")
	pluginCmd.AddCommand(replay)
}

type replayOptions struct {
	config, baseline, profile, output string
}

func runPluginReplay(ctx context.Context, out io.Writer, recording string, o *replayOptions) error {
	if o.config == "" {
		return errors.New("--config is required: the candidate config to replay")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: must be text or json", o.output)
	}
	f, err := os.Open(recording)
	if err != nil {
		return err
	}
	recs, err := wasmtest.ReadRecording(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", recording, err)
	}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	snap := cache.NewSnapshot()
	build := func(file string) (*wasmtest.Scheduler, error) {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		s, err := wasmtest.NewScheduler(ctx, h, data, filepath.Dir(file), o.profile, snap)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return s, nil
	}
	cand, err := build(o.config)
	if err != nil {
		return err
	}
	var base *wasmtest.Scheduler
	if o.baseline != "" {
		if base, err = build(o.baseline); err != nil {
			return err
		}
	}
	rep, err := wasmtest.Replay(ctx, recs, cand, base, snap)
	if err != nil {
		return err
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	wasmtest.WriteReplay(out, rep)
	return nil
}
