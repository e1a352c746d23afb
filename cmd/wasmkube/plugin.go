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
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

var pluginCmd = &cobra.Command{
	Use:   "plugin",
	Short: "Tools for wasm plugin authors (ABI v1, docs/abi.md)",
}

type pluginCheckOptions struct {
	args        string
	timeout     time.Duration
	memoryLimit string
	cacheDir    string
	verbose     bool
	benchNodes  int
}

func init() {
	o := &pluginCheckOptions{}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Load a wasm plugin, report its ABI version and entry points, and smoke-call them",
		Long: `check loads a plugin module exactly as the scheduler does: it compiles it, checks it
against ABI v1 (imports, exports and their signatures, the wasmkube_abi_version marker),
runs wasmkube_init with --args, and calls every scheduler entry point it exports once with a
synthetic pod and node. It prints what it found and exits non-zero if the scheduler would
refuse the module.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginCheck(ctx, cmd.OutOrStdout(), argv[0], o)
		},
	}
	f := check.Flags()
	f.StringVar(&o.args, "args", "", `plugin args as JSON, as in pluginConfig (e.g. '{"zones":["zone-1"]}')`)
	f.DurationVar(&o.timeout, "timeout", wasmhost.DefaultTimeout, "time limit per call")
	f.StringVar(&o.memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVar(&o.cacheDir, "cache-dir", "", "compilation cache directory (default: none, compile in memory)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show the plugin's log lines")
	f.IntVar(&o.benchNodes, "bench-nodes", 0, "also time Filter and Score over this many synthetic nodes in one batch (0: skip)")
	pluginCmd.AddCommand(check)
	rootCmd.AddCommand(pluginCmd)
}

func runPluginCheck(ctx context.Context, out io.Writer, file string, o *pluginCheckOptions) error {
	mem, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err)
	}
	var args []byte
	if o.args != "" {
		if !json.Valid([]byte(o.args)) {
			return fmt.Errorf("--args: not valid JSON: %s", o.args)
		}
		args = []byte(o.args)
	}
	logOut := io.Discard
	if o.verbose {
		logOut = os.Stderr
	}
	host, err := wasmhost.New(wasmhost.Options{CacheDir: o.cacheDir, Logger: slog.New(slog.NewTextHandler(logOut, nil))})
	if err != nil {
		return err
	}
	defer host.Close(ctx)
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "module:       %s (%d bytes)\n", file, info.Size())
	start := time.Now()
	name := strings.TrimSuffix(filepath.Base(file), ".wasm")
	mod, err := host.Load(ctx, wasmhost.LoadOptions{Name: name, Path: file, Timeout: o.timeout, MemoryLimit: uint64(mem.Value())})
	if err != nil {
		fmt.Fprintf(out, "result:       REJECTED\n")
		return err
	}
	defer mod.Close(ctx)
	fmt.Fprintf(out, "ABI:          v%d (wasmkube_abi_version)\n", wasmhost.ABIVersion)
	fmt.Fprintf(out, "load:         %s (compile, check, instantiate)\n", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "interrupt:    %s\n", mod.Interrupt())
	fmt.Fprintf(out, "limits:       %s per call, %s memory per instance\n", o.timeout, mem.String())
	var kinds []string
	for _, k := range mod.Kinds().List() {
		kinds = append(kinds, k.Export())
	}
	fmt.Fprintf(out, "entry points: %s\n", strings.Join(kinds, ", "))
	start = time.Now()
	pool, err := mod.NewPool(ctx, args, 1)
	if err != nil {
		fmt.Fprintf(out, "result:       REJECTED\n")
		return err
	}
	fmt.Fprintf(out, "instance:     %s (instantiate, _initialize, wasmkube_init)\n", time.Since(start).Round(time.Microsecond))
	if mod.Kinds()&wasmhost.SchedulerKinds == 0 {
		fmt.Fprintf(out, "result:       OK (no scheduler entry point to smoke-call)\n")
		return nil
	}
	failed := false
	pod, node := schedwasm.SmokePod(), schedwasm.SmokeNode()
	fmt.Fprintf(out, "smoke calls:  pod %s/%s (100m cpu, 128Mi) on node %s (4 cpu, 8Gi)\n", pod.Namespace, pod.Name, node.Node().Name)
	for _, k := range (mod.Kinds() & wasmhost.SchedulerKinds).List() {
		call := &wasmhost.Call{Kind: k, Pod: pod, State: framework.NewCycleState()}
		switch k {
		case wasmhost.Filter, wasmhost.PreScore:
			call.Nodes = []*framework.NodeInfo{node}
		case wasmhost.Score:
			call.Nodes, call.Scores = []*framework.NodeInfo{node}, make([]int64, 1)
		case wasmhost.NormalizeScore:
			call.NodeNames, call.Scores = []string{node.Node().Name}, []int64{50}
		case wasmhost.PostFilter:
			call.NodeNames, call.FilterCodes = []string{node.Node().Name}, []int32{wasmhost.CodeUnschedulable}
		}
		t := time.Now()
		err := pool.Do(ctx, call)
		d := time.Since(t).Round(time.Microsecond)
		var ce *wasmhost.CallError
		switch {
		case err == nil:
			fmt.Fprintf(out, "  %-24s ok     %-9s %s\n", k.Export(), d, describeResult(call))
		case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError:
			fmt.Fprintf(out, "  %-24s ok     %-9s Error: %v\n", k.Export(), d, ce.Err)
		default:
			failed = true
			fmt.Fprintf(out, "  %-24s FAILED %-9s %v\n", k.Export(), d, err)
		}
	}
	if failed {
		fmt.Fprintf(out, "result:       REJECTED (the scheduler refuses a module whose smoke call fails)\n")
		return errors.New("plugin check failed")
	}
	if o.benchNodes > 0 {
		if err := benchPlugin(ctx, out, pool, o.benchNodes); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "result:       OK\n")
	return nil
}

// describeResult renders what an entry point returned.
func describeResult(c *wasmhost.Call) string {
	code := framework.Code(c.Code).String()
	switch c.Kind {
	case wasmhost.Filter:
		if len(c.Verdicts) == 0 {
			return "node passed"
		}
		v := c.Verdicts[0]
		return fmt.Sprintf("node rejected: %s: %s", framework.Code(v.Code), strings.ReplaceAll(v.Reason, "\n", ", "))
	case wasmhost.Score, wasmhost.NormalizeScore:
		return fmt.Sprintf("score %d", c.Scores[0])
	case wasmhost.PreFilter:
		if c.PreFilterNodes != nil {
			return fmt.Sprintf("%s, nodes %v", code, c.PreFilterNodes)
		}
	case wasmhost.PostFilter:
		if c.Nominated != "" {
			return "nominated " + c.Nominated
		}
	}
	if c.Reason != "" {
		return code + ": " + c.Reason
	}
	return code
}

// benchPlugin times the batched Filter and Score of a pool over n copies of the smoke node,
// one batch per call, and prints the cost per node.
func benchPlugin(ctx context.Context, out io.Writer, pool *wasmhost.Pool, n int) error {
	nodes := make([]*framework.NodeInfo, n)
	for i := range nodes {
		nodes[i] = schedwasm.SmokeNode()
	}
	pod := schedwasm.SmokePod()
	for _, k := range []wasmhost.Kind{wasmhost.Filter, wasmhost.Score} {
		if !pool.Module().Kinds().Has(k) {
			continue
		}
		call := &wasmhost.Call{Kind: k, Pod: pod, Requests: wasmhost.NewPodRequests(pod), Nodes: nodes, Scores: make([]int64, n), State: framework.NewCycleState()}
		rounds := 0
		start := time.Now()
		for time.Since(start) < time.Second {
			if err := pool.Do(ctx, call); err != nil {
				return fmt.Errorf("bench %s: %w", k.Export(), err)
			}
			rounds++
		}
		perNode := time.Since(start) / time.Duration(rounds*n)
		fmt.Fprintf(out, "bench:        %-24s %d nodes per call, %d calls: %s per node\n", k.Export(), n, rounds, perNode)
	}
	return nil
}
