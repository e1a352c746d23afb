package wasmtest

import (
	"context"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Verdict is what a cycle decided for one node.
type Verdict struct {
	Passed bool   `json:"passed"`
	Code   int32  `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Outcome is what one scheduling cycle of a module produced, by node name.
type Outcome struct {
	// Unschedulable is PreFilter's reason when it rejected the pod outright.
	Unschedulable *string `json:"unschedulable,omitempty"`
	// Verdicts has every node of the cycle (nodes outside PreFilter's set are rejected).
	Verdicts map[string]Verdict `json:"verdicts,omitempty"`
	// Scores are the final scores of the feasible nodes (nil without Score).
	Scores map[string]int64 `json:"scores,omitempty"`
	// Nominated is PostFilter's node, when it ran and nominated one.
	Nominated string `json:"nominated,omitempty"`
}

// Feasible returns the names of the nodes that passed, in name order.
func (o *Outcome) Feasible() []string {
	var out []string
	for n, v := range o.Verdicts {
		if v.Passed {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// Ranking returns the feasible nodes by score, highest first, ties in name order.
func (o *Outcome) Ranking() []string {
	out := o.Feasible()
	sort.SliceStable(out, func(i, j int) bool { return o.Scores[out[i]] > o.Scores[out[j]] })
	return out
}

// CycleOptions shape how a cycle calls the module.
type CycleOptions struct {
	// BatchSize splits Filter and Score into calls of at most this many nodes (0: one
	// call for all nodes), as the scheduler splits them between its workers.
	BatchSize int
	// Rotate, when set, serves each call of the cycle from the next of these pools in
	// turn (the pool argument is then unused), so that no two consecutive calls share an
	// instance: the scheduler gives any call of a cycle to any instance.
	Rotate []*wasmhost.Pool
}

// NodeInfos builds the nodes of a cycle with the pods already on them.
func NodeInfos(nodes []v1.Node, pods []v1.Pod) []*framework.NodeInfo {
	byNode := map[string][]*v1.Pod{}
	for i := range pods {
		byNode[pods[i].Spec.NodeName] = append(byNode[pods[i].Spec.NodeName], &pods[i])
	}
	out := make([]*framework.NodeInfo, len(nodes))
	for i := range nodes {
		ni := framework.NewNodeInfo(byNode[nodes[i].Name]...)
		ni.SetNode(&nodes[i])
		out[i] = ni
	}
	return out
}

// Cycle runs one scheduling cycle of the module's scheduler entry points on pool, in the
// scheduler's order and with its rules (a PreFilter node set, Skip, PostFilter only when
// no node is feasible, NormalizeScore over all scores). A plugin failure (trap, timeout,
// garbage result, Error) is returned as the error: a test wants to see it, whatever the
// plugin's failurePolicy would make of it in a cluster.
func Cycle(ctx context.Context, pool *wasmhost.Pool, pod *v1.Pod, nodes []*framework.NodeInfo, o CycleOptions) (*Outcome, error) {
	calls := 0
	next := func() *wasmhost.Pool {
		if len(o.Rotate) == 0 {
			return pool
		}
		calls++
		return o.Rotate[(calls-1)%len(o.Rotate)]
	}
	if len(o.Rotate) > 0 {
		pool = o.Rotate[0]
	}
	kinds := pool.Module().Kinds()
	state := framework.NewCycleState()
	req := schedwasm.NewPodRequests(pod)
	call := func(k *wasmhost.Kind) *schedwasm.Call {
		return &schedwasm.Call{Kind: k, Pod: pod, Requests: req, State: state}
	}
	out := &Outcome{Verdicts: map[string]Verdict{}}
	for _, n := range nodes {
		out.Verdicts[n.Node().Name] = Verdict{Passed: true}
	}
	candidates := nodes
	skipFilter, skipScore := false, false
	if kinds.Has(schedwasm.PreFilter) {
		c := call(schedwasm.PreFilter)
		if err := c.Do(ctx, next()); err != nil {
			return nil, err
		}
		switch c.Code {
		case schedwasm.CodeUnschedulable, schedwasm.CodeUnschedulableAndUnresolvable:
			r := c.Reason
			out.Unschedulable = &r
			for n := range out.Verdicts {
				out.Verdicts[n] = Verdict{Code: c.Code, Reason: r}
			}
			return out, nil
		case schedwasm.CodeSkip:
			skipFilter = true
		}
		if c.PreFilterNodes != nil {
			set := map[string]bool{}
			for _, n := range c.PreFilterNodes {
				set[n] = true
			}
			candidates = nil
			for _, n := range nodes {
				if set[n.Node().Name] {
					candidates = append(candidates, n)
				} else {
					out.Verdicts[n.Node().Name] = Verdict{Code: schedwasm.CodeUnschedulableAndUnresolvable, Reason: "not in PreFilter's node set"}
				}
			}
		}
	}
	var feasible []*framework.NodeInfo
	if kinds.Has(schedwasm.Filter) && !skipFilter {
		for _, batch := range split(candidates, o.BatchSize) {
			c := call(schedwasm.Filter)
			c.Nodes = batch
			if err := c.Do(ctx, next()); err != nil {
				return nil, err
			}
			rejected := map[int]bool{}
			for _, v := range c.Verdicts {
				if v.Code == schedwasm.CodeError {
					return nil, fmt.Errorf("wasmkube_filter: node %s: Error: %s", batch[v.Index].Node().Name, v.Reason)
				}
				rejected[v.Index] = true
				out.Verdicts[batch[v.Index].Node().Name] = Verdict{Code: v.Code, Reason: v.Reason}
			}
			for i, n := range batch {
				if !rejected[i] {
					feasible = append(feasible, n)
				}
			}
		}
	} else {
		feasible = candidates
	}
	if len(feasible) == 0 {
		if kinds.Has(schedwasm.PostFilter) {
			c := call(schedwasm.PostFilter)
			for _, n := range nodes {
				c.NodeNames = append(c.NodeNames, n.Node().Name)
				c.FilterCodes = append(c.FilterCodes, out.Verdicts[n.Node().Name].Code)
			}
			sort.Sort(byName{c.NodeNames, c.FilterCodes})
			if err := c.Do(ctx, next()); err != nil {
				return nil, err
			}
			out.Nominated = c.Nominated
		}
		return out, nil
	}
	if kinds.Has(schedwasm.PreScore) {
		c := call(schedwasm.PreScore)
		c.Nodes = feasible
		if err := c.Do(ctx, next()); err != nil {
			return nil, err
		}
		skipScore = c.Code == schedwasm.CodeSkip
	}
	if !kinds.Has(schedwasm.Score) || skipScore {
		return out, nil
	}
	out.Scores = map[string]int64{}
	names := make([]string, 0, len(feasible))
	raw := make([]int64, 0, len(feasible))
	for _, batch := range split(feasible, o.BatchSize) {
		c := call(schedwasm.Score)
		c.Nodes, c.Scores = batch, make([]int64, len(batch))
		if err := c.Do(ctx, next()); err != nil {
			return nil, err
		}
		for i, n := range batch {
			names = append(names, n.Node().Name)
			raw = append(raw, c.Scores[i])
		}
	}
	if kinds.Has(schedwasm.NormalizeScore) {
		c := call(schedwasm.NormalizeScore)
		c.NodeNames, c.Scores = names, raw
		if err := c.Do(ctx, next()); err != nil {
			return nil, err
		}
	}
	for i, n := range names {
		out.Scores[n] = raw[i]
	}
	return out, nil
}

func split(nodes []*framework.NodeInfo, size int) [][]*framework.NodeInfo {
	if size <= 0 || size >= len(nodes) {
		return [][]*framework.NodeInfo{nodes}
	}
	var out [][]*framework.NodeInfo
	for len(nodes) > 0 {
		n := min(size, len(nodes))
		out = append(out, nodes[:n])
		nodes = nodes[n:]
	}
	return out
}

type byName struct {
	names []string
	codes []int32
}

func (b byName) Len() int           { return len(b.names) }
func (b byName) Less(i, j int) bool { return b.names[i] < b.names[j] }
func (b byName) Swap(i, j int) {
	b.names[i], b.names[j] = b.names[j], b.names[i]
	b.codes[i], b.codes[j] = b.codes[j], b.codes[i]
}
