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
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

func init() {
	var kubeconfig, output string
	var cycles, requests int
	var duration time.Duration
	var admissionResources []string
	scheduling := true
	record := &cobra.Command{
		Use:   "record --kubeconfig FILE -o RECORDING.jsonl [--admission pods,deployments,...] [--scheduling=false]",
		Short: "Record a running cluster's scheduling decisions and admitted writes",
		Long: `record watches nodes and pods through the API server and writes the cluster's scheduling
history as JSON Lines: the nodes, the pods already bound, and every scheduling decision (the
pod before it was bound and the node it went to), until --cycles decisions, --duration, or
Ctrl-C. 'plugin replay' rebuilds that history offline and asks a candidate config where each
pod would have gone.

With --admission RESOURCES it also records every write to those resources as an admission
request (CREATE, UPDATE, DELETE, with the object as stored), and namespaces as context, for
'plugin replay' to run a candidate config's admission policies on; --requests stops after
that many. --scheduling=false records admission requests alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if kubeconfig == "" || output == "" {
				return errors.New("--kubeconfig and -o/--output are required")
			}
			if !scheduling && len(admissionResources) == 0 {
				return errors.New("--scheduling=false needs --admission RESOURCES: there is nothing else to record")
			}
			if !scheduling && cycles > 0 {
				return errors.New("--cycles counts scheduling decisions, and --scheduling=false records none: use --requests")
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			var dyn dynamic.Interface
			if len(admissionResources) > 0 {
				if dyn, err = dynamic.NewForConfig(cfg); err != nil {
					return err
				}
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
			st, err := wasmtest.RecordClusterStats(ctx, client, f, wasmtest.RecordOptions{Cycles: cycles, Ready: ready,
				NoScheduling: !scheduling, Admission: admissionResources, Dynamic: dyn, Requests: requests})
			switch {
			case !scheduling:
				fmt.Fprintf(cmd.OutOrStdout(), "recorded %d admission requests to %s\n", st.Requests, output)
			case len(admissionResources) > 0:
				fmt.Fprintf(cmd.OutOrStdout(), "recorded %d scheduling decisions and %d admission requests to %s\n", st.Cycles, st.Requests, output)
			default:
				fmt.Fprintf(cmd.OutOrStdout(), "recorded %d scheduling decisions to %s\n", st.Cycles, output)
			}
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
	rf.StringSliceVar(&admissionResources, "admission", nil, "record writes to these resources (pods,deployments,configmaps) as admission requests (default: none)")
	rf.IntVar(&requests, "requests", 0, "stop after this many admission requests (0: no limit)")
	rf.BoolVar(&scheduling, "scheduling", true, "record scheduling (false: admission requests only, with --admission)")
	pluginCmd.AddCommand(record)

	ro := &replayOptions{}
	replay := &cobra.Command{
		Use:   "replay RECORDING.jsonl --config CANDIDATE.yaml [--baseline CURRENT.yaml]",
		Short: "Replay a recording against a candidate config and print what would change",
		Long: `replay rebuilds the recorded cluster offline and, before each recorded decision, asks the
candidate config (its scheduler: section, wasm plugins included) where the pod would go,
scoring every node. With --baseline it compares with a replay of the baseline config on the
same history (and says how well the baseline reproduces the recording); without, with the
recorded decisions themselves. It counts pods that would land on the same node (or a tie),
on another node, or nowhere, and prints examples.

A recording with admission requests (record --admission) is also run through the candidate
config's admission: section, mutating policies then validating ones, against the recorded
objects as they were: it counts requests that would be refused, changed or warned, by
policy, with examples; with --baseline, only where the baseline answers differently.`,
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
	var hasSched, hasAdm bool
	for i := range recs {
		hasSched = hasSched || recs[i].Scheduling()
		hasAdm = hasAdm || recs[i].AdmissionPart()
	}
	// A recording of neither (empty) is a scheduling one, as before admission was recorded.
	hasSched = hasSched || !hasAdm
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension, admitwasm.Extension}, Logger: quiet})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	var admRep *wasmtest.AdmissionReport
	var closers []*admitwasm.Policies
	defer func() {
		for _, p := range closers {
			p.Close(ctx)
		}
	}()
	if hasAdm {
		// A config's admission: section (wasm policies), or a file of
		// ValidatingAdmissionPolicies and MutatingAdmissionPolicies (CEL).
		load := func(file string) (wasmtest.AdmissionSet, error) {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, err
			}
			if wasmtest.IsCELPolicies(data) {
				return wasmtest.CELPolicies(file, data)
			}
			p, err := wasmtest.AdmissionPolicies(ctx, admitwasm.Options{Host: h, Logger: quiet}, file, data)
			if err != nil {
				return nil, err
			}
			closers = append(closers, p)
			return p, nil
		}
		cand, err := load(o.config)
		if err != nil {
			return err
		}
		var base wasmtest.AdmissionSet
		if o.baseline != "" {
			if base, err = load(o.baseline); err != nil {
				return err
			}
		}
		if admRep, err = wasmtest.ReplayAdmission(ctx, recs, cand, base); err != nil {
			return err
		}
	}
	var schedRep *wasmtest.ReplayReport
	if hasSched {
		if schedRep, err = replayScheduling(ctx, h, recs, o); err != nil {
			return err
		}
	}
	if o.output == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		// The scheduling report's fields at the top (as before), the admission report
		// under "admission".
		return enc.Encode(struct {
			*wasmtest.ReplayReport
			Admission *wasmtest.AdmissionReport `json:"admission,omitempty"`
		}{schedRep, admRep})
	}
	if schedRep != nil {
		wasmtest.WriteReplay(out, schedRep)
	}
	if admRep != nil {
		wasmtest.WriteAdmissionReplay(out, admRep)
	}
	return nil
}

// replayScheduling replays the scheduling part against the configs' scheduler: sections.
func replayScheduling(ctx context.Context, h *wasmhost.Host, recs []wasmtest.Record, o *replayOptions) (*wasmtest.ReplayReport, error) {
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
		return nil, err
	}
	var base *wasmtest.Scheduler
	if o.baseline != "" {
		if base, err = build(o.baseline); err != nil {
			return nil, err
		}
	}
	return wasmtest.Replay(ctx, recs, cand, base, snap)
}
