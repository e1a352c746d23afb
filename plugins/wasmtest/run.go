package wasmtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Options configure how the kit loads a module.
type Options struct {
	// Timeout and MemoryLimit are the per-call limits (0: DefaultTimeout of the module's
	// kinds, and the ABI's memory default).
	Timeout     time.Duration
	MemoryLimit uint64
	// CacheDir is the compilation cache (empty: in memory).
	CacheDir string
	// Log receives the plugin's log lines (nil: discarded).
	Log io.Writer
}

// Plugin is a module loaded by the kit, as the scheduler loads it.
type Plugin struct {
	Path string
	host *wasmhost.Host
	mod  *wasmhost.Module
	opts Options
}

// Open loads and ABI-checks the module at path.
func Open(ctx context.Context, path string, o Options) (*Plugin, error) {
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{schedwasm.Extension, admitwasm.Extension, nodewasm.Extension},
		CacheDir: o.CacheDir, Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".wasm")
	// Every capability is granted, as each component grants its kinds (the kubelet the
	// pod network; the API server object reads for the resources a policy's config lists).
	lo := wasmhost.LoadOptions{Name: name, Path: path, Timeout: o.Timeout, MemoryLimit: o.MemoryLimit,
		Capabilities: []string{admitwasm.CapabilityObjects, nodewasm.NetworkCapability}}
	if lo.Timeout == 0 {
		lo.Timeout = wasmhost.DefaultTimeout
	}
	mod, err := h.Load(ctx, lo)
	if err == nil && o.Timeout == 0 {
		// Which kinds the module exports is known once it is loaded; the second load
		// reuses the first one's compilation (the host shares it by content).
		if d := DefaultTimeout(mod.Kinds()); d != lo.Timeout {
			_ = mod.Close(ctx)
			lo.Timeout = d
			mod, err = h.Load(ctx, lo)
		}
	}
	if err != nil {
		_ = h.Close(ctx)
		return nil, err
	}
	return &Plugin{Path: path, host: h, mod: mod, opts: o}, nil
}

// DefaultTimeout is the time limit per call of a module exporting kinds, when none is
// given: the default of the component that runs it, so that the kit passes and fails
// what the cluster does. The scheduler's is wasmhost.DefaultTimeout, the API server's
// admitwasm.DefaultTimeout (upstream's webhook timeoutSeconds), the kubelet's
// nodewasm.DefaultLimit (a probe's default timeoutSeconds). A module of several
// components' kinds gets the strictest.
func DefaultTimeout(kinds wasmhost.Kinds) time.Duration {
	var d time.Duration
	for _, c := range []struct {
		kinds wasmhost.Kinds
		limit time.Duration
	}{{schedwasm.Kinds, wasmhost.DefaultTimeout}, {admitwasm.Kinds, admitwasm.DefaultTimeout}, {nodewasm.Kinds, nodewasm.DefaultLimit}} {
		if len(kinds.Intersect(c.kinds)) > 0 && (d == 0 || c.limit < d) {
			d = c.limit
		}
	}
	if d == 0 {
		d = wasmhost.DefaultTimeout
	}
	return d
}

// DefaultTimeouts describes the defaults of DefaultTimeout, for a flag's help.
func DefaultTimeouts() string {
	return fmt.Sprintf("the component's default: %s for scheduler entry points, %s for admission (the API server's, as upstream's webhook timeoutSeconds), %s for probe and preStop (a probe's default timeoutSeconds; the kubelet caps it by the probe's timeoutSeconds or the grace period left); the strictest for a module of several components",
		wasmhost.DefaultTimeout, admitwasm.DefaultTimeout, nodewasm.DefaultLimit)
}

// Close frees the module.
func (p *Plugin) Close(ctx context.Context) {
	_ = p.mod.Close(ctx)
	_ = p.host.Close(ctx)
}

// Module is the loaded module.
func (p *Plugin) Module() *wasmhost.Module { return p.mod }

// Result is the outcome of one case or one conformance check.
type Result struct {
	Name     string        `json:"name"`
	Passed   bool          `json:"passed"`
	Skipped  bool          `json:"skipped,omitempty"`
	Diff     []string      `json:"diff,omitempty"`
	Duration time.Duration `json:"durationNanos"`
}

// Run runs every case of f on p, each on a fresh pool with the case's args.
func (p *Plugin) Run(ctx context.Context, f *File) []Result {
	out := make([]Result, 0, len(f.Cases))
	for _, c := range f.Cases {
		start := time.Now()
		diff := p.runCase(ctx, &c)
		out = append(out, Result{Name: c.Name, Passed: len(diff) == 0, Diff: diff, Duration: time.Since(start)})
	}
	return out
}

func (p *Plugin) runCase(ctx context.Context, c *Case) []string {
	pool, err := p.mod.NewPool(ctx, c.Args, 1)
	if err != nil {
		return []string{"the plugin did not load with the case's args: " + err.Error()}
	}
	defer pool.Close()
	switch c.kind() {
	case "admission":
		return p.runAdmission(ctx, c, pool)
	case "hook":
		return p.runHook(ctx, c, pool)
	case "binding":
		return p.runBinding(ctx, c, pool)
	case "signature":
		return p.runSignature(ctx, c, pool)
	}
	if len(p.mod.Kinds().Intersect(schedwasm.Kinds)) == 0 {
		return []string{"the case is a scheduling cycle, and the module exports no scheduler entry point"}
	}
	got, err := Cycle(ctx, pool, c.Pod, NodeInfos(c.Nodes, c.Pods), CycleOptions{})
	if err != nil {
		var ce *wasmhost.CallError
		if errors.As(err, &ce) {
			return []string{fmt.Sprintf("plugin failure in %s: %s: %v", ce.Kind, ce.Reason, ce.Err)}
		}
		return []string{"plugin failure: " + err.Error()}
	}
	return Compare(c.Expect, got)
}

// Compare returns the differences between what a case expects and what the cycle
// produced, one readable line each; none when the case passes.
func Compare(want Expect, got *Outcome) []string {
	var diff []string
	if want.Unschedulable != nil {
		switch {
		case got.Unschedulable == nil:
			diff = append(diff, fmt.Sprintf("want PreFilter to reject the pod (reason containing %q), got no rejection", *want.Unschedulable))
		case !strings.Contains(*got.Unschedulable, *want.Unschedulable):
			diff = append(diff, fmt.Sprintf("want PreFilter's reason to contain %q, got %q", *want.Unschedulable, *got.Unschedulable))
		}
	} else if got.Unschedulable != nil && (want.Feasible != nil || want.Scores != nil || want.Ranking != nil) {
		diff = append(diff, fmt.Sprintf("PreFilter rejected the pod: %q", *got.Unschedulable))
		return diff
	}
	if want.Feasible != nil {
		if f := got.Feasible(); !slices.Equal(sorted(want.Feasible), f) {
			diff = append(diff, fmt.Sprintf("feasible nodes: want %v, got %v", sorted(want.Feasible), f))
			for _, n := range sortedKeys(got.Verdicts) {
				if v := got.Verdicts[n]; !v.Passed && slices.Contains(want.Feasible, n) {
					diff = append(diff, fmt.Sprintf("  node %s was rejected: %s", n, v.Reason))
				}
			}
		}
	}
	for _, n := range sortedKeys(want.Rejected) {
		sub := want.Rejected[n]
		v := got.Verdicts[n]
		switch {
		case v.Passed:
			diff = append(diff, fmt.Sprintf("node %s: want rejected (reason containing %q), got passed", n, sub))
		case !strings.Contains(v.Reason, sub):
			diff = append(diff, fmt.Sprintf("node %s: want a reason containing %q, got %q", n, sub, v.Reason))
		}
	}
	for _, n := range sortedKeys(want.Scores) {
		s, ok := got.Scores[n]
		switch {
		case !ok:
			diff = append(diff, fmt.Sprintf("node %s: want score %d, got no score (not feasible, or Score skipped)", n, want.Scores[n]))
		case s != want.Scores[n]:
			diff = append(diff, fmt.Sprintf("node %s: want score %d, got %d", n, want.Scores[n], s))
		}
	}
	if want.Ranking != nil {
		r := got.Ranking()
		if len(r) < len(want.Ranking) || !slices.Equal(r[:len(want.Ranking)], want.Ranking) {
			diff = append(diff, fmt.Sprintf("ranking: want %v first, got %v (scores %v)", want.Ranking, r, got.Scores))
		}
	}
	if want.Nominated != "" && got.Nominated != want.Nominated {
		diff = append(diff, fmt.Sprintf("nominated: want %s, got %q", want.Nominated, got.Nominated))
	}
	return diff
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
