package wasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// BindingCase is a case of the binding-cycle or queueing entry points: calls, in order, on
// one cycle state and one set of shared counters.
type BindingCase struct {
	// Points are the calls: reserve, unreserve, permit, prebind, postbind, hint.
	Points []string `json:"points"`
	// Node is the node chosen for the pod (node 0 of the node accessors).
	Node v1.Node `json:"node"`
	// Waiting are the pods the plugin holds at Permit before the calls.
	Waiting []WaitingPod `json:"waiting,omitempty"`
	// Counters are the plugin's shared counters before the calls.
	Counters map[string]int64 `json:"counters,omitempty"`
	// Event is a hint's event.
	Event *Event `json:"event,omitempty"`
}

// WaitingPod is a pod held at Permit by the plugin, under a group.
type WaitingPod struct {
	UID   string `json:"uid"`
	Group string `json:"group,omitempty"`
}

// Event is a cluster event for a queueing hint: resource Node or Pod, action Add, Delete or
// Update, and its objects (a Node or a Pod).
type Event struct {
	Resource  string          `json:"resource"`
	Action    string          `json:"action"`
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
}

var pointKinds = map[string]*wasmhost.Kind{
	"reserve": schedwasm.Reserve, "unreserve": schedwasm.Unreserve, "permit": schedwasm.Permit,
	"prebind": schedwasm.PreBind, "postbind": schedwasm.PostBind, "hint": schedwasm.QueueingHint,
}

var actions = map[string]framework.ActionType{"Add": framework.Add, "Delete": framework.Delete, "Update": framework.Update}

// resultName names a call's code as a case's expect.result does.
func resultName(kind *wasmhost.Kind, code int32) string {
	if kind == schedwasm.QueueingHint {
		if code == schedwasm.CodeSkip {
			return "Skip"
		}
		return "Queue"
	}
	return framework.Code(code).String()
}

// BindingCall makes one call of a binding-cycle kind (or a hint) with the kit's data.
type bindingRun struct {
	pool    *wasmhost.Pool
	shared  *schedwasm.SharedCounters
	state   *framework.CycleState
	waiting []schedwasm.WaitingEntry
}

func (r *bindingRun) call(ctx context.Context, kind *wasmhost.Kind, pod *v1.Pod, node *v1.Node, ev *framework.ClusterEvent, oldObj, newObj any) (*schedwasm.Call, error) {
	b := &schedwasm.BindingData{Shared: r.shared, Waiting: func() []schedwasm.WaitingEntry { return r.waiting }}
	if node != nil {
		b.NodeName, b.Node = node.Name, node
	}
	if kind == schedwasm.QueueingHint {
		b = &schedwasm.BindingData{Event: *ev, OldObj: oldObj, NewObj: newObj}
	}
	c := &schedwasm.Call{Kind: kind, Pod: pod, State: r.state, Binding: b}
	err := c.Do(ctx, r.pool)
	if err == nil && kind == schedwasm.Permit && c.Code == schedwasm.CodeWait && b.WaitMs == 0 {
		err = errors.New("wasmkube_permit returned Wait (4) without calling permit_wait")
	}
	return c, err
}

func (p *Plugin) runBinding(ctx context.Context, c *Case, pool *wasmhost.Pool) []string {
	b := c.Binding
	if c.Pod == nil {
		return []string{"a binding case needs a pod"}
	}
	r := &bindingRun{pool: pool, shared: &schedwasm.SharedCounters{}, state: framework.NewCycleState()}
	for k, v := range b.Counters {
		r.shared.Add(k, v)
	}
	for _, w := range b.Waiting {
		r.waiting = append(r.waiting, schedwasm.WaitingEntry{UID: types.UID(w.UID), Group: w.Group})
	}
	if len(b.Points) == 0 {
		return []string{"binding.points: at least one of reserve, unreserve, permit, prebind, postbind, hint"}
	}
	var last *schedwasm.Call
	var lastErr error
	for i, pt := range b.Points {
		kind, ok := pointKinds[pt]
		if !ok {
			return []string{fmt.Sprintf("binding.points[%d]: %q is not one of reserve, unreserve, permit, prebind, postbind, hint", i, pt)}
		}
		if !p.mod.Kinds().Has(kind) {
			return []string{fmt.Sprintf("binding.points[%d]: the module does not export %s", i, kind.Export)}
		}
		var ev framework.ClusterEvent
		var oldObj, newObj any
		if kind == schedwasm.QueueingHint {
			if b.Event == nil {
				return []string{fmt.Sprintf("binding.points[%d]: a hint needs binding.event", i)}
			}
			var err error
			ev, oldObj, newObj, err = b.Event.decode()
			if err != nil {
				return []string{"binding.event: " + err.Error()}
			}
		}
		last, lastErr = r.call(ctx, kind, c.Pod, &b.Node, &ev, oldObj, newObj)
		if lastErr != nil && i < len(b.Points)-1 {
			return failure(pt, lastErr)
		}
	}
	var diff []string
	got := ""
	if lastErr != nil {
		got = "Error"
		var ce *wasmhost.CallError
		if !errors.As(lastErr, &ce) || ce.Reason != wasmhost.ReasonError {
			return failure("the last call", lastErr)
		}
	} else {
		got = resultName(last.Kind, last.Code)
	}
	want := c.Expect
	if want.Result != "" && got != want.Result {
		diff = append(diff, fmt.Sprintf("result: got %s (reason %q), want %s", got, last.Reason, want.Result))
	}
	if want.Reason != "" && !strings.Contains(last.Reason, want.Reason) {
		diff = append(diff, fmt.Sprintf("reason: got %q, want it to contain %q", last.Reason, want.Reason))
	}
	if want.WaitGroup != nil && last.Binding.WaitGroup != *want.WaitGroup {
		diff = append(diff, fmt.Sprintf("waitGroup: got %q, want %q", last.Binding.WaitGroup, *want.WaitGroup))
	}
	uids := func(us []types.UID) []string {
		out := make([]string, len(us))
		for i, u := range us {
			out[i] = string(u)
		}
		return sorted(out)
	}
	if want.Released != nil && !slices.Equal(uids(last.Binding.Allows), sorted(want.Released)) {
		diff = append(diff, fmt.Sprintf("released: got %v, want %v", uids(last.Binding.Allows), sorted(want.Released)))
	}
	if want.RejectedWaiting != nil {
		var rej []types.UID
		for _, x := range last.Binding.Rejects {
			rej = append(rej, x.UID)
		}
		if !slices.Equal(uids(rej), sorted(want.RejectedWaiting)) {
			diff = append(diff, fmt.Sprintf("rejectedWaiting: got %v, want %v", uids(rej), sorted(want.RejectedWaiting)))
		}
	}
	if want.Counters != nil && !maps.Equal(r.shared.Snapshot(), want.Counters) {
		diff = append(diff, fmt.Sprintf("counters: got %v, want %v", r.shared.Snapshot(), want.Counters))
	}
	return diff
}

func (e *Event) decode() (framework.ClusterEvent, any, any, error) {
	a, ok := actions[e.Action]
	if !ok {
		return framework.ClusterEvent{}, nil, nil, fmt.Errorf("action %q is not one of Add, Delete, Update", e.Action)
	}
	ev := framework.ClusterEvent{Resource: e.Resource, Action: a}
	obj := func(r json.RawMessage) (any, error) {
		if len(r) == 0 {
			return nil, nil
		}
		switch e.Resource {
		case framework.ResourceNode:
			n := &v1.Node{}
			return n, json.Unmarshal(r, n)
		case framework.ResourcePod:
			p := &v1.Pod{}
			return p, json.Unmarshal(r, p)
		}
		return nil, fmt.Errorf("resource %q is not one of Node, Pod", e.Resource)
	}
	newObj, err := obj(e.Object)
	if err != nil {
		return ev, nil, nil, err
	}
	oldObj, err := obj(e.OldObject)
	return ev, oldObj, newObj, err
}

// bindingChecks are the conformance checks of the binding-cycle and queueing exports
// (docs/plugin-kit.md), each run only when the module exports what it checks.
func (p *Plugin) bindingChecks(ctx context.Context, o ConformanceOptions) []Result {
	var out []Result
	run := func(name string, applies bool, why string, f func() []string) {
		start := time.Now()
		if !applies {
			out = append(out, Result{Name: name, Skipped: true, Diff: []string{why}})
			return
		}
		diff := f()
		out = append(out, Result{Name: name, Passed: len(diff) == 0, Diff: diff, Duration: time.Since(start)})
	}
	k := p.mod.Kinds()
	run("Unreserve undoes exactly what Reserve did", k.Has(schedwasm.Reserve) || k.Has(schedwasm.Unreserve),
		"the module exports neither wasmkube_reserve nor wasmkube_unreserve", func() []string { return checkUnreserve(ctx, p, o) })
	run("Permit waits are bounded", k.Has(schedwasm.Permit), "the module exports no wasmkube_permit",
		func() []string { return checkPermitBounded(ctx, p, o) })
	run("hints queue every event that helps a pod the Filter rejected", k.Has(schedwasm.Events) && k.Has(schedwasm.Filter),
		"the module has no wasmkube_events with a wasmkube_filter to judge its hints by", func() []string { return checkHints(ctx, p, o) })
	return out
}

// checkUnreserve: for every fixture pod and a few nodes, Reserve then Unreserve on one cycle
// state leaves the shared counters as they were, and an Unreserve with no Reserve before it
// (another plugin's Reserve failed first) changes nothing.
func checkUnreserve(ctx context.Context, p *Plugin, o ConformanceOptions) []string {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff
	}
	defer pool.Close()
	k := p.mod.Kinds()
	r := &bindingRun{pool: pool, shared: &schedwasm.SharedCounters{}}
	for _, ni := range fixtureNodes(12) {
		node := ni.Node()
		for _, pod := range fixturePods() {
			before := r.shared.Snapshot()
			r.state = framework.NewCycleState()
			if k.Has(schedwasm.Reserve) {
				if _, err := r.call(ctx, schedwasm.Reserve, pod, node, nil, nil, nil); err != nil && !isPluginError(err) {
					return failure("Reserve of pod "+pod.Name+" on "+node.Name, err)
				}
			}
			if k.Has(schedwasm.Unreserve) {
				if _, err := r.call(ctx, schedwasm.Unreserve, pod, node, nil, nil, nil); err != nil && !isPluginError(err) {
					return failure("Unreserve of pod "+pod.Name+" on "+node.Name, err)
				}
			}
			if after := r.shared.Snapshot(); !maps.Equal(before, after) {
				diff = append(diff, fmt.Sprintf("pod %s on %s: the shared counters were %v before Reserve and %v after Unreserve (Unreserve must undo exactly what Reserve did)", pod.Name, node.Name, before, after))
			}
			if !k.Has(schedwasm.Unreserve) {
				continue
			}
			before = r.shared.Snapshot()
			r.state = framework.NewCycleState()
			if _, err := r.call(ctx, schedwasm.Unreserve, pod, node, nil, nil, nil); err != nil && !isPluginError(err) {
				return failure("Unreserve without Reserve of pod "+pod.Name, err)
			}
			if after := r.shared.Snapshot(); !maps.Equal(before, after) {
				diff = append(diff, fmt.Sprintf("pod %s on %s: an Unreserve with no Reserve before it changed the shared counters from %v to %v (keep a marker in cycle state)", pod.Name, node.Name, before, after))
			}
		}
		if len(diff) > 3 {
			break
		}
	}
	return diff
}

// DefaultMaxPermitWait is the longest Permit wait conformance accepts (ConformanceOptions
// MaxPermitWait): upstream's coscheduling plugin waits 60 s by default, and a pod held
// longer holds its node's room as long.
const DefaultMaxPermitWait = 5 * time.Minute

// checkPermitBounded: every Wait gives a timeout within the bound, and a Permit that
// waits for every pod, even for a pod it alone holds and nobody else waits with, is
// reported when it never allows one after seeing the others waiting.
func checkPermitBounded(ctx context.Context, p *Plugin, o ConformanceOptions) []string {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff
	}
	defer pool.Close()
	bound := o.MaxPermitWait
	if bound <= 0 {
		bound = DefaultMaxPermitWait
	}
	r := &bindingRun{pool: pool, shared: &schedwasm.SharedCounters{}}
	node := fixtureNodes(1)[0].Node()
	groups := map[string]int{}
	for _, pod := range fixturePods() {
		r.state = framework.NewCycleState()
		c, err := r.call(ctx, schedwasm.Permit, pod, node, nil, nil, nil)
		if err != nil {
			if !isPluginError(err) {
				diff = append(diff, failure("Permit of pod "+pod.Name, err)...)
			}
			continue
		}
		if c.Code != schedwasm.CodeWait {
			continue
		}
		if d := time.Duration(c.Binding.WaitMs) * time.Millisecond; d > bound {
			diff = append(diff, fmt.Sprintf("pod %s: Permit waits %v, over the bound of %v (a pod held at Permit keeps its node's room)", pod.Name, d, bound))
		}
		groups[c.Binding.WaitGroup]++
	}
	// The same pod again and again, with all earlier copies waiting in its group: a
	// gang plugin lets them go once the group is big enough; one that waits for ever
	// never does.
	for _, pod := range fixturePods() {
		r.waiting = nil
		released := false
		for i := range 64 {
			cp := pod.DeepCopy()
			cp.UID = types.UID(fmt.Sprintf("%s-%d", pod.UID, i))
			cp.Name = fmt.Sprintf("%s-%d", pod.Name, i)
			r.state = framework.NewCycleState()
			c, err := r.call(ctx, schedwasm.Permit, cp, node, nil, nil, nil)
			if err != nil || c.Code != schedwasm.CodeWait {
				released = true
				break
			}
			if len(c.Binding.Allows) > 0 {
				released = true
				break
			}
			r.waiting = append(r.waiting, schedwasm.WaitingEntry{UID: cp.UID, Group: c.Binding.WaitGroup})
		}
		if !released {
			diff = append(diff, fmt.Sprintf("pod %s: 64 copies waited at Permit in one group and no Permit call allowed any (a Permit that waits for ever leaves every pod to its timeout)", pod.Name))
		}
	}
	sort.Strings(diff)
	return diff
}

// checkHints: for every event the module registers, build events from the fixtures that do
// help (a Filter that rejected the pod would now pass) and fail when the hint says Skip.
func checkHints(ctx context.Context, p *Plugin, o ConformanceOptions) []string {
	pool, diff := p.pool(ctx, o.Args, 1)
	if diff != nil {
		return diff
	}
	defer pool.Close()
	evs, err := schedwasm.RegisteredEvents(ctx, pool)
	if err != nil {
		return failure("wasmkube_events", err)
	}
	hasHint := p.mod.Kinds().Has(schedwasm.QueueingHint)
	r := &bindingRun{pool: pool}
	nodes := fixtureNodes(24)
	passes := func(pod *v1.Pod, ni *framework.NodeInfo) (bool, error) {
		c := &schedwasm.Call{Kind: schedwasm.Filter, Pod: pod, State: framework.NewCycleState(), Nodes: []*framework.NodeInfo{ni}}
		if err := c.Do(ctx, pool); err != nil {
			return false, err
		}
		return len(c.Verdicts) == 0, nil
	}
	for _, reg := range evs {
		for _, pod := range fixturePods() {
			// Rejected on a, fits on b: Node Add of b and Node Update a -> b help.
			for i, a := range nodes {
				okA, err := passes(pod, a)
				if err != nil {
					return failure("Filter of pod "+pod.Name, err)
				}
				if okA {
					continue
				}
				b := nodes[(i+1)%len(nodes)]
				okB, err := passes(pod, b)
				if err != nil {
					return failure("Filter of pod "+pod.Name, err)
				}
				if !okB {
					continue
				}
				for _, ev := range []struct {
					ev       framework.ClusterEvent
					old, new any
				}{
					{framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}, nil, b.Node()},
					{framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Update}, a.Node(), b.Node()},
				} {
					if !reg.Matches(ev.ev) || !hasHint {
						continue
					}
					c, err := r.call(ctx, schedwasm.QueueingHint, pod, nil, &ev.ev, ev.old, ev.new)
					if err != nil {
						continue // a failing hint queues
					}
					if c.Code == schedwasm.CodeSkip {
						diff = append(diff, fmt.Sprintf("pod %s: the hint says Skip for Node %s %s, but the Filter passes the pod on %s where it rejected it on %s", pod.Name, actionName(ev.ev.Action), b.Node().Name, b.Node().Name, a.Node().Name))
					}
				}
				break
			}
		}
	}
	if len(diff) > 10 {
		diff = append(diff[:10], fmt.Sprintf("... and %d more", len(diff)-10))
	}
	return diff
}

func actionName(a framework.ActionType) string {
	for k, v := range actions {
		if v == a {
			return k
		}
	}
	return fmt.Sprint(int(a))
}

func isPluginError(err error) bool {
	var ce *wasmhost.CallError
	return errors.As(err, &ce) && ce.Reason == wasmhost.ReasonError
}
