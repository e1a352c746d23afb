package runtime

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// MonitorScore is a Score plugin in Monitor mode (a WasmPolicy's spec.mode): computed on
// every cycle that scores, beside the profile's Score plugins and with their totals, and
// never changing the placement. Observe learns whether the plugin would have moved the
// pod (the node it would have picked, "" when it agrees).
type MonitorScore struct {
	Name    string
	Factory framework.PluginFactory
	Args    json.RawMessage
	Weight  int64
	Observe func(would string)
}

type monitorScore struct {
	MonitorScore
	p framework.ScorePlugin
}

// newMonitors builds the monitor plugins of a profile with f as their handle.
func (f *Framework) newMonitors(ctx context.Context, ms []MonitorScore) error {
	for _, m := range ms {
		p, err := m.Factory(ctx, m.Args, f)
		if err != nil {
			return fmt.Errorf("profile %q: monitor plugin %q: %w", f.profile, m.Name, err)
		}
		f.monitorPlugins = append(f.monitorPlugins, p)
		sp, ok := p.(framework.ScorePlugin)
		if !ok || !Implements(p, "Score") {
			return fmt.Errorf("profile %q: monitor plugin %q does not implement Score", f.profile, m.Name)
		}
		f.monitors = append(f.monitors, monitorScore{MonitorScore: m, p: sp})
	}
	return nil
}

// runMonitors scores the feasible nodes with each monitor plugin (its PreScore first, in
// a copy of the cycle state so that nothing it writes reaches the enforced plugins), adds
// its weighted, normalized scores to the profile's totals, and tells it whether the node
// with the highest sum is another than best (a tie with best is agreement).
func (f *Framework) runMonitors(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodes []*framework.NodeInfo, totals []int64, best int) {
	for _, m := range f.monitors {
		st := state.Clone()
		if pre, ok := m.p.(framework.PreScorePlugin); ok && Implements(m.p, "PreScore") {
			if s := pre.PreScore(ctx, st, pod, nodes); !s.IsSuccess() {
				continue // Skip or a failure: it has no opinion on this pod
			}
		}
		list := make(framework.NodeScoreList, len(nodes))
		ok := true
		for i, n := range nodes {
			sc, s := m.p.Score(ctx, st, pod, n)
			if !s.IsSuccess() {
				ok = false
				break
			}
			list[i] = framework.NodeScore{Name: n.Node().Name, Score: sc}
		}
		if !ok {
			continue
		}
		if ext := m.p.ScoreExtensions(); ext != nil {
			if s := ext.NormalizeScore(ctx, st, pod, list); !s.IsSuccess() {
				continue
			}
		}
		would := wouldPick(totals, list, m.Weight, best)
		if m.Observe != nil {
			m.Observe(would)
		}
	}
}

// wouldPick is the node the sums of totals and the weighted scores rank first, or "" when
// best is among the first.
func wouldPick(totals []int64, list framework.NodeScoreList, weight int64, best int) string {
	top, topSum := -1, int64(0)
	for i := range totals {
		sum := totals[i] + list[i].Score*weight
		if top < 0 || sum > topSum {
			top, topSum = i, sum
		}
	}
	if top < 0 || totals[best]+list[best].Score*weight == topSum {
		return ""
	}
	return list[top].Name
}
