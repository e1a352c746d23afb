package wasmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/cache"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/core/scheduler/plugins"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// ReadRecording reads a recording written by RecordCluster.
func ReadRecording(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("recording line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Scheduler is one scheduler config's profile, built offline as the scheduler builds it
// (in-tree and wasm plugins), scoring every node of every cycle.
type Scheduler struct {
	fwk  *runtime.Framework
	snap *cache.Snapshot
}

// NewScheduler builds the profile named profile ("" is the first) of a whole wasmkube
// config file; wasm plugin paths are relative to baseDir. snap is the view it schedules
// against (the replay keeps it up to date).
func NewScheduler(ctx context.Context, h *wasmhost.Host, data []byte, baseDir, profile string, snap *cache.Snapshot) (*Scheduler, error) {
	cfg, err := config.Parse(data)
	if err != nil {
		return nil, err
	}
	registry := plugins.NewInTreeRegistry()
	loader := schedwasm.NewLoader(h)
	for _, w := range cfg.WasmPlugins {
		f, err := loader.Load(ctx, w, baseDir)
		if err != nil {
			return nil, err
		}
		registry[w.Name] = f
	}
	var p *config.Profile
	for i := range cfg.Profiles {
		if profile == "" || cfg.Profiles[i].SchedulerName == profile {
			p = &cfg.Profiles[i]
			break
		}
	}
	if p == nil {
		return nil, fmt.Errorf("the config has no profile %q", profile)
	}
	fwk, err := runtime.New(ctx, registry, p, runtime.Options{Lister: snap, Parallelism: int(cfg.Parallelism),
		PercentageOfNodesToScore: 100, KeepTotals: true})
	if err != nil {
		return nil, err
	}
	return &Scheduler{fwk: fwk, snap: snap}, nil
}

// decide schedules pod against the snapshot: the chosen node and every feasible node's
// total, or an unschedulable reason.
func (s *Scheduler) decide(ctx context.Context, pod *v1.Pod) (host string, totals map[string]int64, unschedulable string, err error) {
	res, err := s.fwk.SchedulePod(ctx, framework.NewCycleState(), pod)
	var fe *runtime.FitError
	if errors.As(err, &fe) {
		return "", nil, fe.Error(), nil
	}
	if err != nil {
		return "", nil, "", err
	}
	return res.SuggestedHost, res.Totals, "", nil
}

// Change is one decision that the candidate makes differently.
type Change struct {
	Pod string `json:"pod"`
	// From is the reference node ("" when the reference could not place the pod).
	From string `json:"from"`
	// To is the candidate's node ("" when it cannot place the pod; Reason says why).
	To     string `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// ReplayReport says what a candidate config would have changed.
type ReplayReport struct {
	// Reference is "recording" (the cluster's own decisions) or "baseline" (a replay of
	// the baseline config on the same history).
	Reference string `json:"reference"`
	Cycles    int    `json:"cycles"`
	// Same counts decisions the candidate makes alike (the same node, or a node with the
	// same total score: a tie the scheduler breaks at random).
	Same int `json:"same"`
	// Moved counts pods the candidate would place on another node.
	Moved int `json:"moved"`
	// Unschedulable counts pods the reference placed and the candidate cannot.
	Unschedulable int `json:"unschedulable"`
	// Placed counts pods the reference could not place and the candidate can.
	Placed int `json:"placed"`
	// Examples are the first changes, up to 10 of each kind.
	Examples []Change `json:"examples,omitempty"`
	// ByNode counts the candidate's placements per node, next to the reference's.
	ByNode map[string][2]int `json:"byNode,omitempty"`
	// Fidelity, with a baseline: how many of the recording's decisions the baseline
	// replay makes alike (a measure of how well the replay reproduces the cluster).
	Fidelity *int          `json:"baselineMatchesRecording,omitempty"`
	Duration time.Duration `json:"durationNanos"`
}

// Replay rebuilds the recorded history and, before each recorded decision, asks the
// candidate (and the baseline, when given) where the pod would go. State moves on with the
// recorded decision, so every cycle is asked against the cluster as it really was.
func Replay(ctx context.Context, recs []Record, candidate, baseline *Scheduler, snap *cache.Snapshot) (*ReplayReport, error) {
	start := time.Now()
	c := cache.New()
	rep := &ReplayReport{Reference: "recording", ByNode: map[string][2]int{}}
	if baseline != nil {
		rep.Reference = "baseline"
		zero := 0
		rep.Fidelity = &zero
	}
	bound := map[string]*v1.Pod{}
	examples := map[string]int{}
	note := func(kind string, ch Change) {
		if examples[kind] < 10 {
			examples[kind]++
			rep.Examples = append(rep.Examples, ch)
		}
	}
	for i, rec := range recs {
		switch {
		case rec.Node != nil:
			c.AddNode(rec.Node)
		case rec.NodeDeleted != "":
			c.RemoveNode(rec.NodeDeleted)
		case rec.Pod != nil:
			key := rec.Pod.Namespace + "/" + rec.Pod.Name
			if old, ok := bound[key]; ok {
				_ = c.RemovePod(old)
			}
			if err := c.AddPod(rec.Pod); err == nil {
				bound[key] = rec.Pod
			}
		case rec.PodDeleted != "":
			if p, ok := bound[rec.PodDeleted]; ok {
				_ = c.RemovePod(p)
				delete(bound, rec.PodDeleted)
			}
		case rec.Cycle != nil:
			c.UpdateSnapshot(snap)
			pod := rec.Cycle.Pod
			name := pod.Namespace + "/" + pod.Name
			refHost, refTotals, refWhy := rec.Cycle.Node, map[string]int64(nil), ""
			if baseline != nil {
				h, t, why, err := baseline.decide(ctx, pod)
				if err != nil {
					return nil, fmt.Errorf("record %d: baseline, pod %s: %w", i+1, name, err)
				}
				if same(h, t, rec.Cycle.Node, nil) {
					*rep.Fidelity++
				}
				refHost, refTotals, refWhy = h, t, why
			}
			h, t, why, err := candidate.decide(ctx, pod)
			if err != nil {
				return nil, fmt.Errorf("record %d: candidate, pod %s: %w", i+1, name, err)
			}
			rep.Cycles++
			by := rep.ByNode[h]
			by[0]++
			if h != "" {
				rep.ByNode[h] = by
			}
			if refHost != "" {
				ref := rep.ByNode[refHost]
				ref[1]++
				rep.ByNode[refHost] = ref
			}
			switch {
			case refHost == "" && h == "":
				rep.Same++
			case refHost == "":
				rep.Placed++
				note("placed", Change{Pod: name, To: h, Reason: "the reference could not place it: " + refWhy})
			case h == "":
				rep.Unschedulable++
				note("unschedulable", Change{Pod: name, From: refHost, Reason: why})
			case same(h, t, refHost, refTotals):
				rep.Same++
			default:
				rep.Moved++
				note("moved", Change{Pod: name, From: refHost, To: h})
			}
			// The cluster moves on with what really happened.
			p := pod.DeepCopy()
			p.Spec.NodeName = rec.Cycle.Node
			if err := c.AddPod(p); err == nil {
				bound[name] = p
			}
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// same reports whether two decisions are alike: the same node, or nodes that tie on
// either side's total score (the scheduler picks among ties at random).
func same(a string, aTotals map[string]int64, b string, bTotals map[string]int64) bool {
	if a == b {
		return true
	}
	if ta, ok := aTotals[b]; ok && ta == aTotals[a] {
		return true
	}
	if tb, ok := bTotals[a]; ok && tb == bTotals[b] {
		return true
	}
	return false
}

// WriteReplay prints a report as text.
func WriteReplay(w io.Writer, rep *ReplayReport) {
	fmt.Fprintf(w, "replayed %d scheduling cycles in %s against the %s\n", rep.Cycles, rep.Duration.Round(time.Millisecond), rep.Reference)
	if rep.Fidelity != nil {
		fmt.Fprintf(w, "baseline reproduces the recording in %d of %d cycles\n", *rep.Fidelity, rep.Cycles)
	}
	fmt.Fprintf(w, "  same node (or a tie):   %d\n", rep.Same)
	fmt.Fprintf(w, "  another node:           %d\n", rep.Moved)
	fmt.Fprintf(w, "  would be unschedulable: %d\n", rep.Unschedulable)
	fmt.Fprintf(w, "  newly placed:           %d\n", rep.Placed)
	for _, ch := range rep.Examples {
		switch {
		case ch.To == "":
			fmt.Fprintf(w, "  pod %s: %s -> unschedulable: %s\n", ch.Pod, ch.From, ch.Reason)
		case ch.From == "":
			fmt.Fprintf(w, "  pod %s: unschedulable -> %s\n", ch.Pod, ch.To)
		default:
			fmt.Fprintf(w, "  pod %s: %s -> %s\n", ch.Pod, ch.From, ch.To)
		}
	}
	if len(rep.ByNode) > 0 && len(rep.ByNode) <= 50 {
		names := make([]string, 0, len(rep.ByNode))
		for n := range rep.ByNode {
			names = append(names, n)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "  pods per node (candidate / %s):\n", rep.Reference)
		for _, n := range names {
			fmt.Fprintf(w, "    %-30s %d / %d\n", n, rep.ByNode[n][0], rep.ByNode[n][1])
		}
	}
}
