package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

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
	// plugin test --cluster
	cluster        bool
	kubeconfig     string
	serverConfig   string
	clusterTimeout time.Duration
}

func (o *kitOptions) flags(c *cobra.Command) {
	f := c.Flags()
	f.DurationVar(&o.timeout, "timeout", 0, "time limit per call (0: "+wasmtest.DefaultTimeouts()+")")
	f.StringVar(&o.memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVarP(&o.output, "output", "o", "text", "text, json, or junit (a JUnit XML report on stdout)")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show the plugin's log lines")
}

func (o *kitOptions) check() error {
	switch o.output {
	case "text", "json", "junit":
		return nil
	}
	return fmt.Errorf("--output %q: must be text, json or junit", o.output)
}

func (o *kitOptions) log() io.Writer {
	if o.verbose {
		return os.Stderr
	}
	return nil
}

func (o *kitOptions) open(ctx context.Context, file string) (*wasmtest.Plugin, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	mem, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return nil, fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err)
	}
	// --timeout 0 (the default): the limit of the component that runs the module.
	return wasmtest.Open(ctx, file, wasmtest.Options{Timeout: o.timeout, MemoryLimit: uint64(mem.Value()), Log: o.log()})
}

// report prints the results as asked and fails when any did not pass.
func (o *kitOptions) report(out io.Writer, suite string, rs []wasmtest.Result) error {
	switch o.output {
	case "json":
		if err := wasmtest.WriteJSON(out, rs); err != nil {
			return err
		}
	case "junit":
		if err := wasmtest.WriteJUnitTo(out, suite, rs); err != nil {
			return err
		}
	default:
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
		Use:   "test [FILE.wasm|POLICIES.yaml] CASES.yaml|tests.yaml...",
		Short: "Run a plugin or CEL admission policies on case files, or admission policies on a results grid (tests.yaml), and compare with the expected answers",
		Long: `test loads the plugin as its component does (scheduler, API server or kubelet, with that
component's default time limit) and runs each case of the case files: a scheduling cycle (a
pod, nodes and the pods on them; expected feasible and rejected nodes, reasons, scores,
ranking, nomination), an admission request (expected verdict, message, warnings, the mutated
object), or a probe or preStop call against a fake pod endpoint (expected success, reason,
requests made). A tests.yaml results grid (policies x resources -> pass, fail, warn, skip,
and patchedResource for a mutate, as kyverno test) names its own policies; FILE.wasm is then
optional, and serves the policies without a path. Schemas in docs/plugin-kit.md.
Instead of FILE.wasm, a YAML file of ValidatingAdmissionPolicies and
MutatingAdmissionPolicies with their bindings (as 'plugin replay' takes) runs the case
files' admission requests through those CEL policies, with upstream's libraries, so one
case file checks a wasm policy and the CEL policy it replaces.
It prints one line per case (or JSON, or JUnit XML with -o junit; --junit FILE writes it too),
the differences under each failure, and exits 1 if any case failed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			if len(argv) == 1 && (strings.HasSuffix(argv[0], ".wasm") || isCELPolicies(argv[0])) {
				return fmt.Errorf("no case file: plugin test %s CASES.yaml|tests.yaml...", argv[0])
			}
			return runPluginTest(ctx, cmd.OutOrStdout(), argv[0], argv[1:], to)
		},
	}
	to.flags(test)
	tf := test.Flags()
	tf.BoolVar(&to.cluster, "cluster", false, "run the tests.yaml grids against a live cluster: each policy swapped into --server-config (an admission policy into admission.policies, a scheduler plugin with a profile of the run's own), its resources created (UPDATE rows: updated) in their own namespaces, the denials, warnings, stored objects and placements on the cluster's nodes asserted, everything deleted and the config restored")
	tf.StringVar(&to.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (--cluster)")
	tf.StringVar(&to.serverConfig, "server-config", "", "the running API server's config file, on this machine, where each policy is swapped in (--cluster)")
	tf.DurationVar(&to.clusterTimeout, "cluster-timeout", 30*time.Second, "time limit of each --cluster step: a swap, an apply, a cleanup")
	pluginCmd.AddCommand(test)

	co := &kitOptions{}
	conf := &cobra.Command{
		Use:   "conformance FILE.wasm",
		Short: "Check a plugin of any kind against the ABI contract: determinism, batches, no state across calls, idempotent mutation, buffers, limits, leaks",
		Long: `conformance runs the checks of docs/plugin-kit.md on every entry point the module
exports. Scheduler kinds: the same answers on every instance, for any batch split and node
order, with no state carried from one pod to the next; long, unicode and unrelated data; empty
objects; a 5000-node batch inside the time limit; bounded memory over 2 x 10,000 cycles; bad
args refused at load with a reason. Admission (Validate, Mutate) and kubelet hooks (Probe,
PreStop): every fixture answered without a failure, no state across calls, the buffer rule,
empty objects, bounded memory; and for admission, a Mutate re-invoked on its own output and
given an object that already carries its patch changes nothing (the path that changed is
named), and a Validate's verdict depends neither on call count nor on requests seen before.
Failures name their cause (a leak as a leak, a batch dependence as scores or verdicts, a
warning over the size cap). It prints each check with PASS, FAIL (and why) or SKIP (and why),
as text, JSON or JUnit (-o junit, or --junit FILE too), and exits 1 if any check failed.`,
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

// isCELPolicies reports whether file holds admissionregistration.k8s.io objects (VAPs,
// MAPs and their bindings) rather than cases.
func isCELPolicies(file string) bool {
	data, err := os.ReadFile(file)
	return err == nil && wasmtest.IsCELPolicies(data)
}

func runPluginTest(ctx context.Context, out io.Writer, module string, caseFiles []string, o *kitOptions) error {
	var cel wasmtest.AdmissionSet
	switch {
	case strings.HasSuffix(module, ".wasm"):
	case isCELPolicies(module):
		// CEL policies in the module's place: the case files' requests go through them.
		data, err := os.ReadFile(module)
		if err != nil {
			return err
		}
		if cel, err = wasmtest.CELPolicies(module, data); err != nil {
			return err
		}
	default:
		// No module first: every file must be a grid naming its own policies.
		module, caseFiles = "", append([]string{module}, caseFiles...)
	}
	if err := o.check(); err != nil {
		return err
	}
	var files []*wasmtest.File
	var grids []*wasmtest.Grid
	var fileOf []string
	var gridOf []string
	for _, f := range caseFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if wasmtest.IsGrid(b) {
			if cel != nil {
				return fmt.Errorf("%s: a tests.yaml grid names its own policies (wasm modules): give it without %s", f, module)
			}
			g, err := wasmtest.LoadGrid(f)
			if err != nil {
				return err
			}
			grids, gridOf = append(grids, g), append(gridOf, f)
			continue
		}
		cf, err := wasmtest.ParseFile(filepath.Base(f), b)
		if err != nil {
			return err
		}
		if module == "" {
			return fmt.Errorf("%s: a case file needs the module: plugin test FILE.wasm %s", f, f)
		}
		if o.cluster {
			return fmt.Errorf("%s: --cluster runs tests.yaml grids; a case file runs in process only", f)
		}
		files, fileOf = append(files, cf), append(fileOf, f)
	}
	prefix := func(file string, r wasmtest.Result) wasmtest.Result {
		if len(caseFiles) > 1 {
			r.Name = filepath.Base(file) + ": " + r.Name
		}
		return r
	}
	var rs []wasmtest.Result
	if len(files) > 0 && cel != nil {
		for i, f := range files {
			for _, r := range wasmtest.RunCEL(ctx, cel, f) {
				rs = append(rs, prefix(fileOf[i], r))
			}
		}
	} else if len(files) > 0 {
		p, err := o.open(ctx, module)
		if err != nil {
			return err
		}
		defer p.Close(ctx)
		for i, f := range files {
			for _, r := range p.Run(ctx, f) {
				rs = append(rs, prefix(fileOf[i], r))
			}
		}
	}
	for i, g := range grids {
		mem, err := resource.ParseQuantity(o.memoryLimit)
		if err != nil {
			return fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err)
		}
		var grs []wasmtest.Result
		if o.cluster {
			if o.kubeconfig == "" {
				return errors.New("--cluster: --kubeconfig (or $KUBECONFIG) is required")
			}
			cfg, cerr := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
			if cerr != nil {
				return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, cerr)
			}
			grs, err = wasmtest.RunGridInCluster(ctx, g, module, wasmtest.ClusterOptions{Config: cfg, ServerConfig: o.serverConfig, Timeout: o.clusterTimeout})
		} else {
			grs, err = wasmtest.RunGrid(ctx, g, module, wasmtest.Options{Timeout: o.timeout, MemoryLimit: uint64(mem.Value()), Log: o.log()})
		}
		if err != nil {
			return fmt.Errorf("%s: %w", gridOf[i], err)
		}
		for _, r := range grs {
			rs = append(rs, prefix(gridOf[i], r))
		}
	}
	suite := strings.TrimSuffix(filepath.Base(module), filepath.Ext(module))
	if module == "" {
		suite = strings.TrimSuffix(filepath.Base(caseFiles[0]), filepath.Ext(caseFiles[0]))
	}
	return o.report(out, suite, rs)
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

// benchOptions are the flags of `plugin bench`.
type benchOptions struct {
	args, memoryLimit, output string
	with                      []string
	timeout, per              time.Duration
	sizes                     []int
	concurrency               int
	save, compare             string
	threshold                 float64
	minThreshold              time.Duration
}

func init() {
	o := &benchOptions{}
	bench := &cobra.Command{
		Use:   "bench FILE.wasm [--with OTHER.wasm|native:NAME]... [--save FILE] [--compare FILE]",
		Short: "Time a plugin's entry points per call (Filter and Score per node at 100, 1000 and 5000 nodes; Validate and Mutate per request), and gate on regressions",
		Long: `bench calls the module's Filter and Score (after its PreFilter and PreScore, as a cycle
does) with batches of fixture nodes, and its Validate and Mutate with a fixture request, for
--time per point, from --concurrency callers at once (each on its own instance), and prints
the median and 99th percentile per call, the cost per node, the host's allocations and bytes
per call, and the pool's instances and memory.
--with adds other modules, or in-tree plugins as native:NodeResourcesFit, timed the same way
in the same run. --save writes the run as a baseline (JSON, or YAML for a .yaml name);
--compare reads one and exits 1 when a point's median per call is more than --threshold
percent slower (and at least --min-threshold slower), or allocates more, as gator bench does.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginBench(ctx, cmd.OutOrStdout(), argv[0], o)
		},
	}
	f := bench.Flags()
	f.StringVar(&o.args, "args", "", "the plugins' args as JSON")
	f.StringSliceVar(&o.with, "with", nil, "other modules or native:NAME in-tree plugins to time in the same run (repeatable)")
	f.IntSliceVar(&o.sizes, "nodes", []int{100, 1000, 5000}, "batch sizes of Filter and Score")
	f.DurationVar(&o.per, "time", time.Second, "how long each point is timed")
	f.IntVar(&o.concurrency, "concurrency", 1, "callers at once, each on its own instance of the plugin")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "time limit per call (high: a bench measures, it does not enforce)")
	f.StringVar(&o.memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVarP(&o.output, "output", "o", "text", "text, json or yaml")
	f.StringVar(&o.save, "save", "", "write this run as a baseline to FILE (YAML for .yaml/.yml, JSON otherwise)")
	f.StringVar(&o.compare, "compare", "", "compare with a baseline saved by --save; exit 1 on a regression")
	f.Float64Var(&o.threshold, "threshold", 10, "percent a point's median per call (or its allocations) may grow before --compare calls it a regression")
	f.DurationVar(&o.minThreshold, "min-threshold", 0, "least absolute slowdown of the median per call that counts as a regression (e.g. 1us: noise below it is ignored)")
	pluginCmd.AddCommand(bench)
}

func runPluginBench(ctx context.Context, out io.Writer, module string, o *benchOptions) error {
	switch o.output {
	case "text", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: must be text, json or yaml", o.output)
	}
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be at least 1", o.concurrency)
	}
	if strings.HasSuffix(o.compare, ".wasm") || strings.HasPrefix(o.compare, "native:") {
		return fmt.Errorf("--compare %s: takes a baseline saved with --save; to time other modules in the same run, use --with", o.compare)
	}
	mem, err := resource.ParseQuantity(o.memoryLimit)
	if err != nil {
		return fmt.Errorf("--memory-limit %q: %w", o.memoryLimit, err)
	}
	var base *wasmtest.Baseline
	if o.compare != "" {
		// Read before the run: a bad file fails at once, not after minutes of timing.
		if base, err = wasmtest.LoadBaseline(o.compare); err != nil {
			return fmt.Errorf("--compare: %w", err)
		}
	}
	bo := wasmtest.BenchOptions{Sizes: o.sizes, Time: o.per, Concurrency: o.concurrency}
	if o.args != "" {
		if !json.Valid([]byte(o.args)) {
			return fmt.Errorf("--args: not valid JSON: %s", o.args)
		}
		bo.Args = []byte(o.args)
	}
	var rows []wasmtest.BenchRow
	for _, target := range append([]string{module}, o.with...) {
		var rs []wasmtest.BenchRow
		if name, ok := strings.CutPrefix(target, "native:"); ok {
			rs, err = wasmtest.BenchNative(ctx, name, bo.Args, bo)
		} else {
			var p *wasmtest.Plugin
			p, err = wasmtest.Open(ctx, target, wasmtest.Options{Timeout: o.timeout, MemoryLimit: uint64(mem.Value())})
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
	if o.save != "" {
		load, _ := os.ReadFile("/proc/loadavg")
		if err := wasmtest.SaveBaseline(o.save, wasmtest.Baseline{Saved: time.Now().UTC(), Load: strings.TrimSpace(string(load)), Rows: rows}); err != nil {
			return fmt.Errorf("--save: %w", err)
		}
	}
	var cmp []wasmtest.Comparison
	if base != nil {
		cmp = wasmtest.CompareBench(base.Rows, rows, wasmtest.Thresholds{Percent: o.threshold, Min: o.minThreshold})
		if len(cmp) == 0 {
			return fmt.Errorf("--compare %s: no point of this run is in the baseline (points, batch sizes and concurrency must match)", o.compare)
		}
	}
	switch o.output {
	case "json", "yaml":
		doc := struct {
			Rows       []wasmtest.BenchRow   `json:"rows"`
			Comparison []wasmtest.Comparison `json:"comparison,omitempty"`
		}{rows, cmp}
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}
		if o.output == "yaml" {
			if b, err = yaml.JSONToYAML(b); err != nil {
				return err
			}
		}
		fmt.Fprintln(out, strings.TrimSpace(string(b)))
	default:
		wasmtest.WriteBench(out, rows)
		if base != nil {
			fmt.Fprintf(out, "\ncompared with %s (saved %s, load %s):\n", o.compare, base.Saved.Format(time.RFC3339), base.Load)
			wasmtest.WriteComparison(out, cmp)
		}
	}
	return wasmtest.Regressed(cmp)
}
