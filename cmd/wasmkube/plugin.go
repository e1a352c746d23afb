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
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmtest"
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
	podFile     string
	nodeFiles   []string
}

func init() {
	o := &pluginCheckOptions{}
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Load a wasm plugin of any kind, report its ABI version and entry points, and smoke-call them as its component does",
		Long: `check loads a plugin module exactly as its component does (scheduler, API server or
kubelet): it compiles it, checks it against ABI v1 (imports, exports and their signatures, the
wasmkube_abi_version marker), runs wasmkube_init with --args, and makes the smoke calls the
component makes before a module replaces another: every scheduler entry point once with a
synthetic pod and node (or --pod and --node), Validate and Mutate with a pod CREATE, Probe
and PreStop against a loopback endpoint. It prints what it found (the time limit is the
component's default unless --timeout is given) and exits non-zero if the component would
refuse the module. For answers beyond a smoke call, see plugin test and plugin conformance.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			ctx, cancel := signalContext()
			defer cancel()
			return runPluginCheck(ctx, cmd.OutOrStdout(), argv[0], o)
		},
	}
	f := check.Flags()
	f.StringVar(&o.args, "args", "", `plugin args as JSON, as in pluginConfig (e.g. '{"zones":["zone-1"]}')`)
	f.DurationVar(&o.timeout, "timeout", 0, "time limit per call (0: "+wasmtest.DefaultTimeouts()+")")
	f.StringVar(&o.memoryLimit, "memory-limit", "64Mi", "memory limit per instance")
	f.StringVar(&o.cacheDir, "cache-dir", "", "compilation cache directory (default: none, compile in memory)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "show the plugin's log lines")
	f.StringVar(&o.podFile, "pod", "", "call the plugin with this pod (YAML or JSON) instead of the synthetic one")
	f.StringSliceVar(&o.nodeFiles, "node", nil, "call the plugin with these nodes (YAML or JSON files; repeatable) instead of the synthetic one")
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
	// Every kind's host, as the scheduler, the API server and the kubelet build theirs.
	host, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension, admitwasm.Extension, nodewasm.Extension},
		CacheDir: o.cacheDir, Logger: slog.New(slog.NewTextHandler(logOut, nil))})
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
	// The check grants every capability (the kubelet grants its kinds the pod network; an
	// admission policy gets object reads only when its config lists resources).
	lo := wasmhost.LoadOptions{Name: name, Path: file, Timeout: o.timeout, MemoryLimit: uint64(mem.Value()),
		Capabilities: []string{admitwasm.CapabilityObjects, nodewasm.NetworkCapability}}
	if lo.Timeout == 0 {
		lo.Timeout = wasmhost.DefaultTimeout
	}
	mod, err := host.Load(ctx, lo)
	if err == nil && o.timeout == 0 {
		// The default limit is its component's: known once the kinds are.
		if d := wasmtest.DefaultTimeout(mod.Kinds()); d != lo.Timeout {
			_ = mod.Close(ctx)
			lo.Timeout = d
			mod, err = host.Load(ctx, lo)
		}
	}
	if err != nil {
		fmt.Fprintf(out, "result:       REJECTED\n")
		return err
	}
	defer mod.Close(ctx)
	fmt.Fprintf(out, "ABI:          v%d (wasmkube_abi_version)\n", wasmhost.ABIVersion)
	fmt.Fprintf(out, "load:         %s (compile, check, instantiate)\n", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(out, "interrupt:    %s\n", mod.Interrupt())
	fmt.Fprintf(out, "limits:       %s per call, %s memory per instance\n", mod.Timeout(), mem.String())
	var kinds []string
	for _, k := range mod.Kinds() {
		kinds = append(kinds, k.Export)
	}
	fmt.Fprintf(out, "entry points: %s\n", strings.Join(kinds, ", "))
	start = time.Now()
	pool, err := mod.NewPool(ctx, args, 1)
	if err != nil {
		fmt.Fprintf(out, "result:       REJECTED\n")
		return err
	}
	fmt.Fprintf(out, "instance:     %s (instantiate, _initialize, wasmkube_init)\n", time.Since(start).Round(time.Microsecond))
	failed := false
	// Admission and kubelet kinds: one smoke call each, as the API server and the kubelet
	// make before a module replaces another.
	for _, part := range []struct {
		kinds wasmhost.Kinds
		what  string
		smoke func(context.Context, *wasmhost.Pool) error
	}{
		{admitwasm.Kinds, "admission request: CREATE pod default/wasmkube-smoke", admitwasm.Smoke},
		{nodewasm.Kinds, "kubelet hook: pod default/wasmkube-smoke, every port answered by a loopback endpoint", nodewasm.Smoke},
	} {
		ks := mod.Kinds().Intersect(part.kinds)
		if len(ks) == 0 {
			continue
		}
		var names []string
		for _, k := range ks {
			names = append(names, k.Export)
		}
		t := time.Now()
		err := part.smoke(ctx, pool)
		d := time.Since(t).Round(time.Microsecond)
		if err != nil {
			failed = true
			fmt.Fprintf(out, "smoke calls:  %s\n  %-24s FAILED %-9s %v\n", part.what, strings.Join(names, ", "), d, err)
			continue
		}
		fmt.Fprintf(out, "smoke calls:  %s\n  %-24s ok     %s\n", part.what, strings.Join(names, ", "), d)
	}
	if len(mod.Kinds().Intersect(schedwasm.Kinds)) == 0 {
		if failed {
			fmt.Fprintf(out, "result:       REJECTED (a module whose smoke call fails is refused)\n")
			return errors.New("plugin check failed")
		}
		fmt.Fprintf(out, "result:       OK\n")
		return nil
	}
	pod, nodes, err := checkObjects(o)
	if err != nil {
		return err
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Node().Name)
	}
	fmt.Fprintf(out, "smoke calls:  pod %s/%s on node(s) %s\n", pod.Namespace, pod.Name, strings.Join(names, ", "))
	state := framework.NewCycleState()
	// As the scheduler's smoke call (schedwasm.Smoke) and a real cycle do: a PreFilter or
	// PreScore that returns Skip leaves its Filter or Score out.
	skipped := map[*wasmhost.Kind]string{}
	shared := &schedwasm.SharedCounters{}
	for _, k := range mod.Kinds().Intersect(schedwasm.Kinds) {
		if by, ok := skipped[k]; ok {
			fmt.Fprintf(out, "  %-24s skip             %s returned Skip\n", k.Export, by)
			continue
		}
		call := &schedwasm.Call{Kind: k, Pod: pod, State: state}
		switch k {
		case schedwasm.Filter, schedwasm.PreScore:
			call.Nodes = nodes
		case schedwasm.Score:
			call.Nodes, call.Scores = nodes, make([]int64, len(nodes))
		case schedwasm.NormalizeScore:
			call.NodeNames, call.Scores = names, make([]int64, len(nodes))
			for i := range call.Scores {
				call.Scores[i] = int64(50 + i)
			}
		case schedwasm.PostFilter:
			call.NodeNames, call.FilterCodes = names, make([]int32, len(nodes))
			for i := range call.FilterCodes {
				call.FilterCodes[i] = schedwasm.CodeUnschedulable
			}
		default:
			// The binding cycle and hints: the first node is the chosen one.
			call.Binding = schedwasm.SmokeBinding(k, nodes[0].Node(), shared)
		}
		t := time.Now()
		err := call.Do(ctx, pool)
		d := time.Since(t).Round(time.Microsecond)
		var ce *wasmhost.CallError
		switch {
		case err == nil:
			fmt.Fprintf(out, "  %-24s ok     %-9s %s\n", k.Export, d, describeResult(call))
			if call.Code == schedwasm.CodeSkip {
				switch k {
				case schedwasm.PreFilter:
					skipped[schedwasm.Filter] = k.Export
				case schedwasm.PreScore:
					skipped[schedwasm.Score], skipped[schedwasm.NormalizeScore] = k.Export, k.Export
				}
			}
		case errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError:
			fmt.Fprintf(out, "  %-24s ok     %-9s Error: %v\n", k.Export, d, ce.Err)
		default:
			failed = true
			fmt.Fprintf(out, "  %-24s FAILED %-9s %v\n", k.Export, d, err)
		}
	}
	if failed {
		fmt.Fprintf(out, "result:       REJECTED (the scheduler refuses a module whose smoke call fails)\n")
		return errors.New("plugin check failed")
	}
	if o.benchNodes > 0 {
		if err := benchPlugin(ctx, out, pool, o.benchNodes, state, skipped); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "result:       OK\n")
	return nil
}

// checkObjects returns the pod and nodes of the smoke calls: from --pod and --node files,
// or the synthetic ones.
func checkObjects(o *pluginCheckOptions) (*v1.Pod, []*framework.NodeInfo, error) {
	pod := schedwasm.SmokePod()
	if o.podFile != "" {
		pod = &v1.Pod{}
		if err := readObject(o.podFile, pod); err != nil {
			return nil, nil, err
		}
	}
	if len(o.nodeFiles) == 0 {
		return pod, []*framework.NodeInfo{schedwasm.SmokeNode()}, nil
	}
	var nodes []*framework.NodeInfo
	for _, f := range o.nodeFiles {
		n := &v1.Node{}
		if err := readObject(f, n); err != nil {
			return nil, nil, err
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		nodes = append(nodes, ni)
	}
	return pod, nodes, nil
}

func readObject(file string, into any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// describeResult renders what an entry point returned.
func describeResult(c *schedwasm.Call) string {
	code := framework.Code(c.Code).String()
	switch c.Kind {
	case schedwasm.Filter:
		passed := len(c.Nodes) - len(c.Verdicts)
		msg := fmt.Sprintf("%d of %d node(s) passed", passed, len(c.Nodes))
		for _, v := range c.Verdicts {
			msg += fmt.Sprintf("; %s rejected: %s: %s", c.Nodes[v.Index].Node().Name, framework.Code(v.Code), strings.ReplaceAll(v.Reason, "\n", ", "))
		}
		return msg
	case schedwasm.Score, schedwasm.NormalizeScore:
		return fmt.Sprintf("scores %v", c.Scores)
	case schedwasm.PreFilter:
		if c.PreFilterNodes != nil {
			return fmt.Sprintf("%s, nodes %v", code, c.PreFilterNodes)
		}
	case schedwasm.PostFilter:
		if c.Nominated != "" {
			return "nominated " + c.Nominated
		}
	case schedwasm.Permit:
		if c.Code == schedwasm.CodeWait && c.Binding != nil {
			return fmt.Sprintf("Wait %d ms, group %q", c.Binding.WaitMs, c.Binding.WaitGroup)
		}
	case schedwasm.Events:
		if c.Binding != nil {
			return fmt.Sprintf("registered %v", c.Binding.Registered)
		}
	case schedwasm.QueueingHint:
		if c.Code == schedwasm.CodeSkip {
			return "Skip"
		}
		return "Queue"
	}
	if c.Reason != "" {
		return code + ": " + c.Reason
	}
	return code
}

// benchPlugin times the batched Filter and Score of a pool over n copies of the smoke node,
// one batch per call, and prints the cost per node.
// The calls use the smoke calls' cycle state, and leave out what a Skip left out there.
func benchPlugin(ctx context.Context, out io.Writer, pool *wasmhost.Pool, n int, state *framework.CycleState, skipped map[*wasmhost.Kind]string) error {
	nodes := make([]*framework.NodeInfo, n)
	for i := range nodes {
		// Each node its own UID and a resourceVersion, as in a cluster: the host serializes
		// a node's JSON once per version, so node_json costs a copy, not a marshal, per call.
		nodes[i] = schedwasm.SmokeNode()
		node := nodes[i].Node().DeepCopy()
		node.Name, node.UID, node.ResourceVersion = fmt.Sprintf("wasmkube-bench-node-%d", i), types.UID(fmt.Sprintf("wasmkube-bench-node-%d", i)), "1"
		nodes[i].SetNode(node)
	}
	pod := schedwasm.SmokePod()
	for _, k := range []*wasmhost.Kind{schedwasm.Filter, schedwasm.Score} {
		if _, skip := skipped[k]; skip || !pool.Module().Kinds().Has(k) {
			continue
		}
		call := &schedwasm.Call{Kind: k, Pod: pod, Requests: schedwasm.NewPodRequests(pod), Nodes: nodes, Scores: make([]int64, n), State: state}
		rounds := 0
		start := time.Now()
		for time.Since(start) < time.Second {
			if err := call.Do(ctx, pool); err != nil {
				return fmt.Errorf("bench %s: %w", k.Export, err)
			}
			rounds++
		}
		perNode := time.Since(start) / time.Duration(rounds*n)
		fmt.Fprintf(out, "bench:        %-24s %d nodes per call, %d calls: %s per node\n", k.Export, n, rounds, perNode)
	}
	return nil
}
