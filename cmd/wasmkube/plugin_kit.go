package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/wasmkube/wasmkube/plugins/wasmtest"
)

// kitOptions are the flags `plugin test` and `plugin conformance` share.
type kitOptions struct {
	timeout     time.Duration
	memoryLimit string
	output      string
	junit       string
	verbose     bool
	args        string
}

func (o *kitOptions) flags(c *cobra.Command) {
	f := c.Flags()
	f.DurationVar(&o.timeout, "timeout", 0, "time limit per call (0: "+wasmtest.DefaultTimeouts()+")")
	f.StringVar(&o.memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVarP(&o.output, "output", "o", "text", "text or json")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show the plugin's log lines")
}

func (o *kitOptions) open(ctx context.Context, file string) (*wasmtest.Plugin, error) {
	if o.output != "text" && o.output != "json" {
		return nil, fmt.Errorf("--output %q: must be text or json", o.output)
	}
	mem, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return nil, fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err)
	}
	var log io.Writer
	if o.verbose {
		log = os.Stderr
	}
	// --timeout 0 (the default): the limit of the component that runs the module.
	return wasmtest.Open(ctx, file, wasmtest.Options{Timeout: o.timeout, MemoryLimit: uint64(mem.Value()), Log: log})
}

// report prints the results as asked and fails when any did not pass.
func (o *kitOptions) report(out io.Writer, suite string, rs []wasmtest.Result) error {
	if o.output == "json" {
		if err := wasmtest.WriteJSON(out, rs); err != nil {
			return err
		}
	} else {
		wasmtest.WriteText(out, rs)
	}
	if o.junit != "" {
		if err := wasmtest.WriteJUnit(o.junit, suite, rs); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if n := wasmtest.Failed(rs); n > 0 {
		return fmt.Errorf("%d of %d failed", n, len(rs))
	}
	return nil
}

func init() {
	to := &kitOptions{}
	test := &cobra.Command{
		Use:   "test FILE.wasm CASES.yaml...",
		Short: "Run a plugin on the cases of YAML files and compare its answers with the expected ones",
		Long: `test loads the plugin as the scheduler does and runs each case of the case files (a pod,
the nodes and the pods already on them, args, and the expected feasible and rejected nodes,
reasons, scores or ranking; schema in docs/plugin-kit.md) as one scheduling cycle. It prints
one line per case, the differences under each failure, and exits 1 if any case failed.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginTest(ctx, cmd.OutOrStdout(), argv[0], argv[1:], to)
		},
	}
	to.flags(test)
	pluginCmd.AddCommand(test)

	co := &kitOptions{}
	conf := &cobra.Command{
		Use:   "conformance FILE.wasm",
		Short: "Check a plugin against the ABI contract: determinism, batches, no global state, buffers, limits, leaks",
		Long: `conformance runs the checks of docs/plugin-kit.md on every scheduler entry point the module
exports: the same answers on every instance, for any batch split and node order, with no
state carried from one pod to the next; long, unicode and unrelated data; empty objects; a
5000-node batch inside the time limit; bounded memory over 10,000 cycles; bad args refused at
load with a reason. It prints each check with PASS, FAIL (and why) or SKIP, and exits 1 if
any check failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginConformance(ctx, cmd.OutOrStdout(), argv[0], co)
		},
	}
	co.flags(conf)
	conf.Flags().StringVar(&co.args, "args", "", "the plugin's args as JSON, as in pluginConfig")
	pluginCmd.AddCommand(conf)
}

func runPluginTest(ctx context.Context, out io.Writer, module string, caseFiles []string, o *kitOptions) error {
	var files []*wasmtest.File
	for _, f := range caseFiles {
		cf, err := wasmtest.LoadFile(f)
		if err != nil {
			return err
		}
		files = append(files, cf)
	}
	p, err := o.open(ctx, module)
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	var rs []wasmtest.Result
	for i, f := range files {
		for _, r := range p.Run(ctx, f) {
			if len(files) > 1 {
				r.Name = filepath.Base(caseFiles[i]) + ": " + r.Name
			}
			rs = append(rs, r)
		}
	}
	return o.report(out, strings.TrimSuffix(filepath.Base(module), ".wasm"), rs)
}

func runPluginConformance(ctx context.Context, out io.Writer, module string, o *kitOptions) error {
	var args []byte
	if o.args != "" {
		args = []byte(o.args)
	}
	p, err := o.open(ctx, module)
	if err != nil {
		return err
	}
	defer p.Close(ctx)
	return o.report(out, strings.TrimSuffix(filepath.Base(module), ".wasm")+" conformance", p.Conformance(ctx, wasmtest.ConformanceOptions{Args: args}))
}

func init() {
	var args, memoryLimit, output string
	var compare []string
	var timeout, per time.Duration
	var sizes []int
	bench := &cobra.Command{
		Use:   "bench FILE.wasm [--compare OTHER.wasm|native:NAME]...",
		Short: "Time a plugin's Filter and Score per call and per node at 100, 1000 and 5000 nodes",
		Long: `bench calls the module's Filter and Score (after its PreFilter and PreScore, as a cycle
does) with batches of fixture nodes, for --time per batch size, and prints the median and
99th percentile per call, the cost per node, and the pool's instances and memory.
--compare adds other modules, or in-tree plugins as native:NodeResourcesFit, timed the same
way in the same run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if output != "text" && output != "json" {
				return fmt.Errorf("--output %q: must be text or json", output)
			}
			mem, err := resource.ParseQuantity(memoryLimit)
			if err != nil {
				return fmt.Errorf("--memory-limit %q: %w", memoryLimit, err)
			}
			bo := wasmtest.BenchOptions{Sizes: sizes, Time: per}
			if args != "" {
				bo.Args = []byte(args)
			}
			var rows []wasmtest.BenchRow
			for _, target := range append([]string{argv[0]}, compare...) {
				var rs []wasmtest.BenchRow
				if name, ok := strings.CutPrefix(target, "native:"); ok {
					rs, err = wasmtest.BenchNative(ctx, name, bo.Args, bo)
				} else {
					var p *wasmtest.Plugin
					p, err = wasmtest.Open(ctx, target, wasmtest.Options{Timeout: timeout, MemoryLimit: uint64(mem.Value())})
					if err == nil {
						rs, err = p.Bench(ctx, bo)
						p.Close(ctx)
					}
				}
				if err != nil {
					return err
				}
				rows = append(rows, rs...)
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			wasmtest.WriteBench(cmd.OutOrStdout(), rows)
			return nil
		},
	}
	f := bench.Flags()
	f.StringVar(&args, "args", "", "the plugins' args as JSON")
	f.StringSliceVar(&compare, "compare", nil, "other modules or native:NAME in-tree plugins to time in the same run (repeatable)")
	f.IntSliceVar(&sizes, "nodes", []int{100, 1000, 5000}, "batch sizes")
	f.DurationVar(&per, "time", time.Second, "how long each batch size is timed")
	f.DurationVar(&timeout, "timeout", 10*time.Second, "time limit per call (high: a bench measures, it does not enforce)")
	f.StringVar(&memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVarP(&output, "output", "o", "text", "text or json")
	pluginCmd.AddCommand(bench)
}
