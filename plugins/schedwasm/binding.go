package schedwasm

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Status codes of the binding-cycle kinds besides those of section 1.3: a Permit's Wait.
const CodeWait int32 = 4

// The binding-cycle and queueing entry points (docs/abi.md section 1.4). None is batched:
// the chosen node is node 0 of the node accessors (name and object; not its resources).
var (
	Reserve   = &wasmhost.Kind{Name: "reserve", Export: "wasmkube_reserve", Codes: []int32{CodeUnschedulable, CodeUnschedulableAndUnresolvable}}
	Unreserve = &wasmhost.Kind{Name: "unreserve", Export: "wasmkube_unreserve"}
	Permit    = &wasmhost.Kind{Name: "permit", Export: "wasmkube_permit", Codes: []int32{CodeUnschedulable, CodeUnschedulableAndUnresolvable, CodeWait}}
	PreBind   = &wasmhost.Kind{Name: "prebind", Export: "wasmkube_prebind", Codes: []int32{CodeUnschedulable}}
	PostBind  = &wasmhost.Kind{Name: "postbind", Export: "wasmkube_postbind"}
	// Events is called once when the plugin is built: it registers the cluster events
	// that may make a pod it rejected schedulable (register_event).
	Events = &wasmhost.Kind{Name: "events", Export: "wasmkube_events"}
	// QueueingHint answers Queue (0) or Skip (5) for one rejected pod and one event.
	QueueingHint = &wasmhost.Kind{Name: "queueinghint", Export: "wasmkube_queueing_hint", Codes: []int32{CodeSkip}}
)

// bindingKinds are the kinds whose call has a chosen node (BindingData).
var bindingKinds = wasmhost.Kinds{Reserve, Unreserve, Permit, PreBind, PostBind}

// maxPermitWaitMs is framework.MaxPermitTimeout in milliseconds.
var maxPermitWaitMs = int64(framework.MaxPermitTimeout / time.Millisecond)

// BindingData is the part of a Call that only the kinds of docs/abi.md section 1.4 have.
type BindingData struct {
	// NodeName is the chosen node (Reserve ... PostBind); Node its object when known.
	NodeName string
	Node     *v1.Node

	// Shared are the plugin's counters (shared_add, shared_get).
	Shared *SharedCounters
	// Waiting lists the pods this plugin holds at Permit (nil: none can be seen).
	Waiting func() []WaitingEntry

	// Event, OldObj and NewObj are a queueing hint's event.
	Event          framework.ClusterEvent
	OldObj, NewObj any

	// Outputs of Permit.
	WaitMs    int64
	WaitGroup string
	Allows    []types.UID
	Rejects   []Rejection
	// Outputs of Events.
	Registered []framework.ClusterEvent
}

// WaitingEntry is a pod a plugin holds at Permit, with the group its Permit gave.
type WaitingEntry struct {
	UID   types.UID
	Group string
}

// Rejection is a waiting_reject of a Permit call.
type Rejection struct {
	UID    types.UID
	Reason string
}

// SharedCounters are a plugin's counters (shared_add, shared_get): one set per plugin
// name, shared by every instance and kept across config swaps, so that a Reserve on one
// instance and the Unreserve on another count against the same number.
type SharedCounters struct {
	mu sync.Mutex
	m  map[string]int64
}

// Add adds delta to key and returns the new value.
func (s *SharedCounters) Add(key string, delta int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int64{}
	}
	v := s.m[key] + delta
	if v == 0 {
		delete(s.m, key)
	} else {
		s.m[key] = v
	}
	return v
}

// Get returns the value of key (0 when never set).
func (s *SharedCounters) Get(key string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

// Snapshot copies every non-zero counter.
func (s *SharedCounters) Snapshot() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

func binding(hc *wasmhost.Call) *BindingData {
	if c := sched(hc); c != nil {
		return c.Binding
	}
	return nil
}

// binding returns the call's BindingData, an empty one when the caller gave none (a
// binding-kind call built by hand: no node, no counters, no waiting pods).
func (c *Call) binding() *BindingData {
	if c.Binding == nil {
		c.Binding = &BindingData{}
	}
	return c.Binding
}

// SmokeBinding is the BindingData of a smoke call of kind k (docs/abi.md 8.1): node is the
// chosen node (Reserve ... PostBind) or a Node Add's node (QueueingHint); the counters are
// the smoke's own.
func SmokeBinding(k *wasmhost.Kind, node *v1.Node, shared *SharedCounters) *BindingData {
	switch k {
	case Reserve, Unreserve, Permit, PreBind, PostBind:
		return &BindingData{NodeName: node.Name, Node: node, Shared: shared}
	case QueueingHint:
		return &BindingData{Event: framework.ClusterEvent{Resource: framework.ResourceNode, Action: framework.Add}, NewObj: node}
	case Events:
		return &BindingData{}
	}
	return nil
}

var resources = map[string]bool{framework.ResourceNode: true, framework.ResourcePod: true}

// bindingFuncs are the host functions of docs/abi.md section 4.8.
var bindingFuncs = []wasmhost.HostFunc{
	{Name: "pod_uid", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Pod == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_uid", s[0], s[1], string(c.Pod.UID))
	}},
	{Name: "shared_add", Params: sig(i32, i32, i64), Results: sig(i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		key := wasmhost.Mem(mod, "shared_add", s[0], s[1])
		b := binding(hc)
		if b == nil || b.Shared == nil {
			hc.SetGarbage("shared_add called from " + hc.Kind.String() + ", only Reserve, Unreserve, Permit, PreBind and PostBind may call it")
			s[0] = 0
			return
		}
		s[0] = uint64(b.Shared.Add(string(key), int64(s[2])))
	}},
	{Name: "shared_get", Params: sig(i32, i32), Results: sig(i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		key := wasmhost.Mem(mod, "shared_get", s[0], s[1])
		b := binding(hc)
		if b == nil || b.Shared == nil {
			s[0] = 0
			return
		}
		s[0] = uint64(b.Shared.Get(string(key)))
	}},
	{Name: "permit_wait", Params: sig(i32, i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		ms := int64(int32(s[0]))
		group := wasmhost.Mem(mod, "permit_wait", s[1], s[2])
		c := sched(hc)
		switch {
		case c == nil || c.Kind != Permit:
			hc.SetGarbage("permit_wait called from " + hc.Kind.String() + ", only Permit may call it")
		case ms < 1 || ms > maxPermitWaitMs:
			hc.SetGarbage("permit_wait: timeout " + strconv.FormatInt(ms, 10) + " ms is outside 1.." + strconv.FormatInt(maxPermitWaitMs, 10))
		default:
			c.binding().WaitMs, c.binding().WaitGroup = ms, wasmhost.Truncate(group, wasmhost.MaxReason)
		}
	}},
	{Name: "waiting_pods", Params: sig(i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		group := string(wasmhost.Mem(mod, "waiting_pods", s[0], s[1]))
		c := sched(hc)
		if c == nil || c.Kind != Permit {
			s[0] = wasmhost.Unavailable
			return
		}
		var sb strings.Builder
		if c.binding().Waiting != nil {
			for _, w := range c.binding().Waiting() {
				if w.Group == group {
					sb.WriteString(string(w.UID))
					sb.WriteByte('\n')
				}
			}
		}
		s[0] = wasmhost.WriteVar(mod, "waiting_pods", s[2], s[3], sb.String())
	}},
	{Name: "waiting_allow", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		uid := types.UID(wasmhost.Mem(mod, "waiting_allow", s[0], s[1]))
		c := sched(hc)
		if c == nil || c.Kind != Permit {
			s[0] = wasmhost.Unavailable
			return
		}
		if !c.binding().holds(uid) {
			s[0] = wasmhost.NotFound
			return
		}
		c.binding().Allows = append(c.binding().Allows, uid)
		s[0] = 0
	}},
	{Name: "waiting_reject", Params: sig(i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		uid := types.UID(wasmhost.Mem(mod, "waiting_reject", s[0], s[1]))
		reason := wasmhost.Truncate(wasmhost.Mem(mod, "waiting_reject", s[2], s[3]), wasmhost.MaxReason)
		c := sched(hc)
		if c == nil || c.Kind != Permit {
			s[0] = wasmhost.Unavailable
			return
		}
		if !c.binding().holds(uid) {
			s[0] = wasmhost.NotFound
			return
		}
		if reason == "" {
			reason = "rejected by plugin " + hc.Plugin()
		}
		c.binding().Rejects = append(c.binding().Rejects, Rejection{UID: uid, Reason: reason})
		s[0] = 0
	}},
	{Name: "register_event", Params: sig(i32, i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		res := string(wasmhost.Mem(mod, "register_event", s[0], s[1]))
		actions := framework.ActionType(int32(s[2]))
		c := sched(hc)
		switch {
		case c == nil || c.Kind != Events:
			hc.SetGarbage("register_event called from " + hc.Kind.String() + ", only wasmkube_events may call it")
		case !resources[res]:
			hc.SetGarbage("register_event: resource " + strconv.Quote(res) + " is not one of Node, Pod")
		case actions <= 0 || actions&^framework.All != 0:
			hc.SetGarbage("register_event: actions " + strconv.Itoa(int(actions)) + " is not a non-empty set of 1 (Add), 2 (Delete), 4 (Update)")
		default:
			c.binding().Registered = append(c.binding().Registered, framework.ClusterEvent{Resource: res, Action: actions})
		}
	}},
	{Name: "event_resource", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Kind != QueueingHint {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "event_resource", s[0], s[1], c.binding().Event.Resource)
	}},
	{Name: "event_action", Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Kind != QueueingHint {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = uint64(uint32(c.binding().Event.Action))
	}},
	{Name: "event_object_json", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		s[0] = eventObject(hc, mod, "event_object_json", s, false)
	}},
	{Name: "event_old_object_json", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		s[0] = eventObject(hc, mod, "event_old_object_json", s, true)
	}},
}

// eventObject writes a queueing hint's object: the new one (for a Delete, the deleted
// one) or the old one (Update only).
func eventObject(hc *wasmhost.Call, mod api.Module, fn string, s []uint64, old bool) uint64 {
	c := sched(hc)
	if c == nil || c.Kind != QueueingHint {
		return wasmhost.Unavailable
	}
	b := c.Binding
	obj := b.NewObj
	if old {
		obj = nil
		if b.Event.Action == framework.Update {
			obj = b.OldObj
		}
	} else if obj == nil {
		obj = b.OldObj
	}
	var js []byte
	switch o := obj.(type) {
	case *v1.Node:
		js = hc.Objects().Node(o)
	case *v1.Pod:
		js = hc.Objects().Pod(o)
	default:
		return wasmhost.Unavailable
	}
	return wasmhost.WriteVar(mod, fn, s[0], s[1], js)
}

// holds reports whether uid waits at this plugin.
func (b *BindingData) holds(uid types.UID) bool {
	if b.Waiting == nil {
		return false
	}
	for _, w := range b.Waiting() {
		if w.UID == uid {
			return true
		}
	}
	return false
}

// waitGroups remembers the group each pod a plugin holds was given by its Permit.
type waitGroups struct {
	mu sync.Mutex
	m  map[types.UID]string
}

func (w *waitGroups) set(uid types.UID, group string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.UID]string{}
	}
	w.m[uid] = group
}

// entries lists the pods that still wait at plugin through h, in UID order, forgetting
// those that no longer do.
func (w *waitGroups) entries(h framework.WaitingPodHandle, plugin string) []WaitingEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]WaitingEntry, 0, len(w.m))
	for uid, g := range w.m {
		wp := h.GetWaitingPod(uid)
		if wp == nil || !contains(wp.GetPendingPlugins(), plugin) {
			delete(w.m, uid)
			continue
		}
		out = append(out, WaitingEntry{UID: uid, Group: g})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// bindingCall is a call of a binding-cycle kind for pod on node.
func (c *core) bindingCall(kind *wasmhost.Kind, state *framework.CycleState, pod *v1.Pod, node string) *Call {
	call := c.getCall(kind, state, pod)
	call.Binding = &BindingData{NodeName: node, Node: framework.ChosenNode(state), Shared: c.shared}
	return call
}

// reservePart implements framework.ReservePlugin.
type reservePart struct{ c *core }

// Reserve calls wasmkube_reserve (when exported).
func (p reservePart) Reserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	c := p.c
	if !c.Kinds().Has(Reserve) {
		return nil
	}
	call := c.bindingCall(Reserve, state, pod, node)
	defer c.putCall(call)
	if err := call.Do(ctx, c.pool); err != nil {
		return c.failed(err)
	}
	return status(call.Code, call.Reason, c.name)
}

// Unreserve calls wasmkube_unreserve (when exported). A failure is counted and logged
// by the host; there is nothing to undo it with, whatever the failurePolicy.
func (p reservePart) Unreserve(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) {
	c := p.c
	if !c.Kinds().Has(Unreserve) {
		return
	}
	call := c.bindingCall(Unreserve, state, pod, node)
	defer c.putCall(call)
	_ = call.Do(ctx, c.pool)
}

// permitPart implements framework.PermitPlugin.
type permitPart struct{ c *core }

// Permit calls wasmkube_permit. The allows and rejects of waiting pods it made apply
// only when the call itself did not fail.
func (p permitPart) Permit(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) (*framework.Status, time.Duration) {
	c := p.c
	call := c.bindingCall(Permit, state, pod, node)
	defer c.putCall(call)
	if c.waitingPods != nil {
		call.Binding.Waiting = func() []WaitingEntry { return c.groups.entries(c.waitingPods, c.name) }
	}
	err := call.Do(ctx, c.pool)
	if err == nil && call.Code == CodeWait && call.Binding.WaitMs == 0 {
		c.pool.CountFailure(Permit)
		err = &wasmhost.CallError{Plugin: c.name, Kind: Permit, Reason: wasmhost.ReasonGarbage,
			Err: wasmhost.Garbage("wasmkube_permit returned Wait (4) without calling permit_wait: a wait needs a timeout")}
	}
	if err != nil {
		return c.failed(err), 0
	}
	if c.waitingPods != nil {
		for _, uid := range call.Binding.Allows {
			if wp := c.waitingPods.GetWaitingPod(uid); wp != nil {
				wp.Allow(c.name)
			}
		}
		for _, r := range call.Binding.Rejects {
			if wp := c.waitingPods.GetWaitingPod(r.UID); wp != nil {
				wp.Reject(c.name, r.Reason)
			}
		}
	}
	if call.Code == CodeWait {
		c.groups.set(pod.UID, call.Binding.WaitGroup)
		return framework.NewStatus(framework.Wait), time.Duration(call.Binding.WaitMs) * time.Millisecond
	}
	return status(call.Code, call.Reason, c.name), 0
}

// preBindPart implements framework.PreBindPlugin.
type preBindPart struct{ c *core }

// PreBind calls wasmkube_prebind.
func (p preBindPart) PreBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) *framework.Status {
	c := p.c
	call := c.bindingCall(PreBind, state, pod, node)
	defer c.putCall(call)
	if err := call.Do(ctx, c.pool); err != nil {
		return c.failed(err)
	}
	return status(call.Code, call.Reason, c.name)
}

// postBindPart implements framework.PostBindPlugin.
type postBindPart struct{ c *core }

// PostBind calls wasmkube_postbind; a failure is counted and logged only (the pod is
// bound already).
func (p postBindPart) PostBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, node string) {
	c := p.c
	call := c.bindingCall(PostBind, state, pod, node)
	defer c.putCall(call)
	_ = call.Do(ctx, c.pool)
}

// EventsToRegister implements framework.EnqueueExtensions for a module that exports
// wasmkube_events: the events it registered, each with wasmkube_queueing_hint as its
// hint when the module exports one (else every registered event queues).
func (c *core) EventsToRegister(ctx context.Context) ([]framework.ClusterEventWithHint, error) {
	if !c.Kinds().Has(Events) {
		return nil, nil
	}
	evs, err := RegisteredEvents(ctx, c.pool)
	if err != nil {
		return nil, err
	}
	var hint framework.QueueingHintFn
	if c.Kinds().Has(QueueingHint) {
		hint = c.hint
	}
	out := make([]framework.ClusterEventWithHint, len(evs)) // non-nil: see RegisteredEvents
	for i, e := range evs {
		out[i] = framework.ClusterEventWithHint{Event: e, QueueingHintFn: hint}
	}
	return out, nil
}

// RegisteredEvents calls wasmkube_events once and returns what it registered.
func RegisteredEvents(ctx context.Context, pool *wasmhost.Pool) ([]framework.ClusterEvent, error) {
	call := &Call{Kind: Events, Binding: &BindingData{}}
	if err := call.Do(ctx, pool); err != nil {
		return nil, err
	}
	if call.Binding.Registered == nil {
		// Exported and registered nothing: no event can help (not nil, which a plugin
		// without wasmkube_events answers).
		return []framework.ClusterEvent{}, nil
	}
	return call.Binding.Registered, nil
}

// hint calls wasmkube_queueing_hint. A failure is an error (the pod is queued, as
// upstream), whatever the failurePolicy.
func (c *core) hint(ctx context.Context, pod *v1.Pod, ev framework.ClusterEvent, oldObj, newObj any) (framework.QueueingHint, error) {
	call := c.getCall(QueueingHint, nil, pod)
	defer c.putCall(call)
	call.Binding = &BindingData{Event: ev, OldObj: oldObj, NewObj: newObj}
	if err := call.Do(ctx, c.pool); err != nil {
		return framework.Queue, err
	}
	if call.Code == CodeSkip {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
