package scheduler

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/core/scheduler/config"
	"github.com/wasmkube/wasmkube/core/scheduler/queue"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

// The scheduler's decision records (docs/explorer.md): each attempt's node x plugin
// matrix, copied in the cycle (runtime.Capture) into a ring and built when read by the
// goroutine that pushes them to the API server.

// recordNodes is how many feasible (and how many rejected) nodes an attempt's record
// lists; 0 when records are off.
func recordNodes(cfg *config.Config) int {
	if cfg.Explorer != nil && cfg.Explorer.Records != nil && *cfg.Explorer.Records < 0 {
		return 0
	}
	if cfg.Explorer != nil && cfg.Explorer.NodesPerAttempt != nil && *cfg.Explorer.NodesPerAttempt > 0 {
		return int(*cfg.Explorer.NodesPerAttempt)
	}
	return config.DefaultExplorerNodesPerAttempt
}

// initExplorer makes the ring and the recorder from the config in force at start (a
// reload does not resize the ring).
func (s *Scheduler) initExplorer(cfg *config.Config) {
	size := 0
	if cfg.Explorer != nil && cfg.Explorer.Records != nil {
		size = int(*cfg.Explorer.Records)
	}
	if size < 0 {
		return
	}
	s.explorer = explorer.NewRecorder(explorer.NewRing(size), explorerv1.ComponentScheduler, s.opts.Identity)
	s.explorerPusher = explorer.NewPusher(s.client.CoreV1().RESTClient(), s.explorer.Ring(), s.log, &s.explorerPush)
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	s.metrics.reg.MustRegister(
		counter("wasmkube_explorer_records_pushed_total", "Decision records the scheduler sent to the API server (whole or summarized).", &s.explorerPush.Sent),
		counter("wasmkube_explorer_records_summarized_total", "Decision records sent as summaries (an attempt that scheduled, without its node matrix): whole records would have cost the push more than 1% of a core.", &s.explorerPush.Summarized),
		counter("wasmkube_explorer_records_lost_total", "Decision records overwritten in the scheduler's ring before they could be sent.", &s.explorerPush.Lost),
	)
}

// ExplorerRing is the ring of the scheduler's decision records (nil when off).
func (s *Scheduler) ExplorerRing() *explorer.Ring { return s.explorer.Ring() }

// pushRecords sends the ring's records to the API server until ctx ends.
func (s *Scheduler) pushRecords(ctx context.Context) {
	if s.explorer == nil {
		return
	}
	s.explorerPusher.Run(ctx)
}

// recordAttempt records a cycle's outcome. e carries the cycle's Capture (nil when the
// cycle ended before an explanation: an error, no nodes). The record is built when read
// (the push): in full, or for a scheduled pod as a summary without its matrix when whole
// records would cost the push more than its share of the CPU (explorer.PushCPU).
func (s *Scheduler) recordAttempt(qp *queue.QueuedPodInfo, profile string, e *runtime.Explanation, result, node, msg string, pf *explorerv1.PostFilterResult, start time.Time) {
	if s.explorer == nil {
		return
	}
	end := time.Now()
	c := e.Capture()
	if c == nil {
		pod := qp.Pod
		a := &explorerv1.SchedulingAttempt{Pod: explorerv1.ObjectRef{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)},
			Attempt: qp.Attempts, Profile: profile, Result: result, Node: node, Message: msg, PostFilter: pf, DurationNanos: end.Sub(start).Nanoseconds()}
		s.explorer.Record(func() explorerv1.Record {
			return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(end), SchedulingAttempt: a}
		})
		return
	}
	c.SetOutcome(result, node, msg)
	attempt := qp.Attempts
	full := func() explorerv1.Record {
		a := c.Attempt(attempt, end.Sub(start), pf)
		return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(end), SchedulingAttempt: &a}
	}
	var summary explorer.Builder
	if result == explorerv1.ResultScheduled {
		summary = func() explorerv1.Record {
			a := c.Summary(attempt, end.Sub(start), pf)
			return explorerv1.Record{Type: explorerv1.TypeSchedulingAttempt, Time: metav1.NewMicroTime(end), SchedulingAttempt: &a}
		}
	}
	if c.SummaryOnly() && summary != nil {
		// Sampled out under load: the cycle copied no matrix.
		s.explorer.Record(func() explorerv1.Record {
			r := summary()
			r.Summarized = true
			return r
		})
		return
	}
	s.explorer.RecordOr(full, summary)
}

// recordSwap records a reload of the scheduler's config.
func (s *Scheduler) recordSwap(policy, tier string, changes []string, err error) {
	if s.explorer == nil {
		return
	}
	sw := explorerv1.Swap{Policy: policy, Tier: tier, Changes: changes, Result: explorerv1.SwapApplied}
	if err != nil {
		sw.Result, sw.Reason = explorerv1.SwapFailed, err.Error()
	}
	now := metav1.NewMicroTime(time.Now())
	s.explorer.Record(func() explorerv1.Record {
		return explorerv1.Record{Type: explorerv1.TypeSwap, Time: now, Swap: &sw}
	})
}

// recordSwaps records what a reload changed: one swap per wasm plugin added, changed
// (module or declaration) or removed, and one for the profiles when their list changed.
func (s *Scheduler) recordSwaps(old, ps *profileSet) {
	if s.explorer == nil || old == nil {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(ps.wasm)) {
		o, had := old.wasm[name]
		switch {
		case !had:
			s.recordSwap(name, "file", []string{"wasm plugin added"}, nil)
		case o.key != ps.wasm[name].key:
			s.recordSwap(name, "file", []string{"module or declaration changed"}, nil)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.wasm)) {
		if _, ok := ps.wasm[name]; !ok {
			s.recordSwap(name, "file", []string{"wasm plugin removed"}, nil)
		}
	}
	was, is := profileNames(old), profileNames(ps)
	if !slices.Equal(was, is) {
		s.recordSwap("", "file", []string{fmt.Sprintf("profiles %v -> %v", was, is)}, nil)
	}
	for _, p := range ps.cfg.Profiles {
		for _, q := range old.cfg.Profiles {
			if q.SchedulerName == p.SchedulerName {
				if changes := profileChanges(q, p); len(changes) > 0 {
					s.recordSwap("", "file", changes, nil)
				}
			}
		}
	}
}

// profileChanges says what changed in one profile between two configs: each extension
// point whose enabled or disabled plugins (or weights) changed ("profile
// default-scheduler: score [pack x2] -> [spread x2]"), and the plugins' args.
func profileChanges(was, is config.Profile) []string {
	var out []string
	a, b := pluginSets(was.Plugins), pluginSets(is.Plugins)
	for i := range a {
		if !slices.Equal(a[i].set.Enabled, b[i].set.Enabled) || !slices.Equal(a[i].set.Disabled, b[i].set.Disabled) {
			out = append(out, fmt.Sprintf("profile %s: %s %s -> %s", is.SchedulerName, a[i].point, describeSet(a[i].set), describeSet(b[i].set)))
		}
	}
	if !reflect.DeepEqual(was.PluginConfig, is.PluginConfig) {
		out = append(out, fmt.Sprintf("profile %s: pluginConfig (plugin args)", is.SchedulerName))
	}
	return out
}

type pointSet struct {
	point string
	set   config.PluginSet
}

func pluginSets(p *config.Plugins) []pointSet {
	if p == nil {
		p = &config.Plugins{}
	}
	return []pointSet{{"multiPoint", p.MultiPoint}, {"preFilter", p.PreFilter}, {"filter", p.Filter}, {"postFilter", p.PostFilter},
		{"preScore", p.PreScore}, {"score", p.Score}, {"reserve", p.Reserve}, {"permit", p.Permit}, {"preBind", p.PreBind},
		{"bind", p.Bind}, {"postBind", p.PostBind}}
}

func describeSet(s config.PluginSet) string {
	var parts []string
	for _, p := range s.Enabled {
		if p.Weight != 0 {
			parts = append(parts, fmt.Sprintf("%s x%d", p.Name, p.Weight))
		} else {
			parts = append(parts, p.Name)
		}
	}
	out := "[" + strings.Join(parts, ", ") + "]"
	if len(s.Disabled) > 0 {
		var d []string
		for _, p := range s.Disabled {
			d = append(d, p.Name)
		}
		out += " disabled [" + strings.Join(d, ", ") + "]"
	}
	return out
}

func profileNames(ps *profileSet) []string {
	var out []string
	for _, p := range ps.cfg.Profiles {
		out = append(out, p.SchedulerName)
	}
	return out
}

// postFilterResult is the record's view of PostFilter's outcome.
func postFilterResult(nominated string, code, msg string) *explorerv1.PostFilterResult {
	return &explorerv1.PostFilterResult{Verdict: code, NominatedNode: nominated, Message: msg}
}
