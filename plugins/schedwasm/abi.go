package schedwasm

import (
	"context"
	"strconv"

	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
	"github.com/wasmkube/wasmkube/plugins/podfuncs"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// Status codes of the scheduler kinds (docs/abi.md section 1.3); they match framework.Code.
const (
	CodeSuccess                            = wasmhost.CodeSuccess
	CodeError                              = wasmhost.CodeError
	CodeUnschedulable                int32 = 2
	CodeUnschedulableAndUnresolvable int32 = 3
	CodeSkip                         int32 = 5
)

// The scheduler entry points, in the order of docs/abi.md.
var (
	PreFilter = &wasmhost.Kind{Name: "prefilter", Export: "wasmkube_prefilter",
		Codes: []int32{CodeUnschedulable, CodeUnschedulableAndUnresolvable, CodeSkip}}
	Filter     = &wasmhost.Kind{Name: "filter", Export: "wasmkube_filter", Batched: true}
	PostFilter = &wasmhost.Kind{Name: "postfilter", Export: "wasmkube_postfilter", Batched: true, Codes: []int32{CodeUnschedulable}}
	PreScore   = &wasmhost.Kind{Name: "prescore", Export: "wasmkube_prescore", Batched: true, Codes: []int32{CodeSkip}}
	Score      = &wasmhost.Kind{Name: "score", Export: "wasmkube_score", Batched: true}
	// NormalizeScore belongs to Score: the loader refuses a module with only this one.
	NormalizeScore = &wasmhost.Kind{Name: "normalizescore", Export: "wasmkube_normalizescore", Batched: true}
)

func init() {
	// Set here: checkScores refers to the kinds themselves.
	Score.Check, NormalizeScore.Check = checkScores, checkScores
}

// Kinds are the scheduler entry points, in cycle order.
var Kinds = wasmhost.Kinds{PreFilter, Filter, PostFilter, PreScore, Score, NormalizeScore,
	Reserve, Unreserve, Permit, PreBind, PostBind, Events, QueueingHint, Sign}

// Extension is the scheduler's part of the host: its kinds and the pod, node, cycle-state
// and result functions of docs/abi.md sections 4.1-4.4.
var Extension = wasmhost.Extension{Name: "scheduler", Kinds: Kinds, Funcs: append(append(append(append(append([]wasmhost.HostFunc(nil), podfuncs.Funcs...), hostFuncs...), rangeFuncs...), bindingFuncs...), signFuncs...)}

// Limits of docs/abi.md section 6.
const maxStateValue = 1 << 20

// Call is one scheduler entry-point call: the data the guest may pull (inputs) and what it
// returned (outputs). A Call is used by one goroutine; reuse it only after Do returned.
type Call struct {
	Kind *wasmhost.Kind

	// Pod is the pod of the call. Requests is its effective request; when nil it is
	// computed on first use (callers that call many times per pod compute it once with
	// NewPodRequests and pass it).
	Pod      *v1.Pod
	Requests *PodRequests

	// Nodes is the batch of Filter, PreScore and Score.
	Nodes []*framework.NodeInfo
	// NodeNames is the batch of PostFilter and NormalizeScore (node names only).
	NodeNames []string
	// FilterCodes holds, for PostFilter, the Filter code that rejected NodeNames[i].
	FilterCodes []int32

	// State is the pod's cycle state (nil: the kind has none).
	State *framework.CycleState

	// Scores: input of NormalizeScore (raw scores) and output of Score and NormalizeScore.
	// The caller sizes it to the batch; the guest's node_score writes into it.
	Scores []int64

	// Outputs.

	// Code is the status code the entry point returned.
	Code int32
	// Reason is the reason set with status_reason.
	Reason string
	// Verdicts are the Filter verdicts set with node_status (accepted nodes have none).
	Verdicts []Verdict
	// PreFilterNodes are the node names set with prefilter_node (nil: all nodes).
	PreFilterNodes []string
	// Nominated is the node set with nominate.
	Nominated string

	// Binding is the data of the binding-cycle and queueing kinds (binding.go); nil for
	// the others.
	Binding *BindingData
	// Fragments are the sign_fragment calls of wasmkube_sign (sign.go).
	Fragments []SignFragment

	// normalized: Score's scores may be out of range (the module normalizes them).
	normalized bool
	hc         wasmhost.Call
}

// Verdict is a Filter result for one node of the batch.
type Verdict struct {
	Index  int
	Code   int32
	Reason string
}

// Do runs the call on an idle instance of p; see wasmhost.Pool.Do.
func (c *Call) Do(ctx context.Context, p *wasmhost.Pool) error {
	c.Verdicts, c.PreFilterNodes, c.Nominated = c.Verdicts[:0], nil, ""
	c.normalized = p.Module().Kinds().Has(NormalizeScore)
	c.hc = wasmhost.Call{Kind: c.Kind, Count: c.count(), Data: c}
	err := p.Do(ctx, &c.hc)
	c.Code, c.Reason = c.hc.Code, c.hc.Reason
	c.hc.Data = nil
	return err
}

// WasmPod implements podfuncs.Source.
func (c *Call) WasmPod() *v1.Pod { return c.Pod }

// count is the batch size passed to a batched entry point.
func (c *Call) count() int {
	if c.Kind == PostFilter || c.Kind == NormalizeScore {
		return len(c.NodeNames)
	}
	return len(c.Nodes)
}

// checkScores is the result check of Score (without NormalizeScore) and NormalizeScore.
func checkScores(hc *wasmhost.Call) error {
	c := hc.Data.(*Call)
	if c.Kind == Score && c.normalized {
		return nil
	}
	for i, s := range c.Scores {
		if s < framework.MinNodeScore || s > framework.MaxNodeScore {
			name, _ := c.nodeName(i)
			return wasmhost.Garbage("score " + strconv.FormatInt(s, 10) + " for node " + name + " is outside [0, 100]")
		}
	}
	return nil
}

// nodeName returns the name of batch entry i, for kinds that have nodes or names.
func (c *Call) nodeName(i int) (string, bool) {
	if c.Binding != nil {
		return c.Binding.NodeName, i == 0 && c.Binding.NodeName != ""
	}
	if c.Kind == PostFilter || c.Kind == NormalizeScore {
		if i < 0 || i >= len(c.NodeNames) {
			return "", false
		}
		return c.NodeNames[i], true
	}
	n := c.node(i)
	if n == nil {
		return "", false
	}
	return n.Name, true
}

// node returns the v1.Node of batch entry i (nil when out of range or absent).
func (c *Call) node(i int) *v1.Node {
	if c.Binding != nil {
		if i == 0 {
			return c.Binding.Node
		}
		return nil
	}
	if ni := c.nodeInfo(i); ni != nil {
		return ni.Node()
	}
	return nil
}

func (c *Call) nodeInfo(i int) *framework.NodeInfo {
	if i < 0 || i >= len(c.Nodes) || c.Kind == PostFilter || c.Kind == NormalizeScore {
		return nil
	}
	return c.Nodes[i]
}

// requests returns the pod's effective request, computing it on first use.
func (c *Call) requests() *PodRequests {
	if c.Requests == nil {
		c.Requests = NewPodRequests(c.Pod)
	}
	return c.Requests
}

// sched returns the scheduler call data of a host call, or nil outside a scheduler call.
func sched(hc *wasmhost.Call) *Call {
	c, _ := hc.Data.(*Call)
	return c
}

var (
	i32 = wasmhost.I32
	i64 = wasmhost.I64
)

func sig(ts ...api.ValueType) []api.ValueType { return ts }

// hostFuncs are the scheduler's functions of docs/abi.md sections 4.1-4.4 (the pod
// accessors shared with other kinds are in podfuncs). Outside a scheduler call they
// answer -2 (UNAVAILABLE), and the result functions record a garbage result.
var hostFuncs = []wasmhost.HostFunc{
	{Name: "pod_requests", Params: sig(i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Pod == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		out := wasmhost.Mem(mod, "pod_requests", s[0], 40)
		encodePodRequests(c.requests(), out)
		s[0] = 40
	}},
	{Name: "pod_scalar_names", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil || c.Pod == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "pod_scalar_names", s[0], s[1], c.requests().scalarNames)
	}},
	{Name: "pod_scalar_request", Params: sig(i32, i32), Results: sig(i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		name := wasmhost.Mem(mod, "pod_scalar_request", s[0], s[1])
		if c == nil || c.Pod == nil {
			s[0] = 0
			return
		}
		s[0] = uint64(c.requests().Scalar[v1.ResourceName(name)])
	}},
	{Name: "state_get", Params: sig(i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		key := wasmhost.Mem(mod, "state_get", s[0], s[1])
		if c == nil || c.State == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		d, ok := c.State.Read(stateKey(hc.Plugin(), key))
		b, isBytes := d.(stateBytes)
		if !ok || !isBytes {
			s[0] = wasmhost.NotFound
			return
		}
		s[0] = wasmhost.WriteVar(mod, "state_get", s[2], s[3], []byte(b))
	}},
	{Name: "state_set", Params: sig(i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		key := wasmhost.Mem(mod, "state_set", s[0], s[1])
		val := wasmhost.Mem(mod, "state_set", s[2], s[3])
		if len(val) > maxStateValue {
			panic(wasmhost.Garbage("state_set: value of " + strconv.Itoa(len(val)) + " bytes exceeds the 1 MiB limit"))
		}
		if c == nil || c.State == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		c.State.Write(stateKey(hc.Plugin(), key), stateBytes(append([]byte(nil), val...)))
		s[0] = 0
	}},
	{Name: "node_json", Params: sig(i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		var n *v1.Node
		if c := sched(hc); c != nil {
			n = c.node(int(int32(s[0])))
		}
		if n == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "node_json", s[1], s[2], hc.Objects().Node(n))
	}},
	{Name: "node_name", Params: sig(i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		if c == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		name, ok := c.nodeName(int(int32(s[0])))
		if !ok {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "node_name", s[1], s[2], name)
	}},
	{Name: "node_label", Params: sig(i32, i32, i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		var n *v1.Node
		if c := sched(hc); c != nil {
			n = c.node(int(int32(s[0])))
		}
		if n == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.Lookup(mod, "node_label", n.Labels, s[1], s[2], s[3], s[4])
	}},
	{Name: "node_taints", Params: sig(i32, i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		var n *v1.Node
		if c := sched(hc); c != nil {
			n = c.node(int(int32(s[0])))
		}
		if n == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = wasmhost.WriteVar(mod, "node_taints", s[1], s[2], encodeTaints(n.Spec.Taints))
	}},
	{Name: "node_resources", Params: sig(i32, i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		var ni *framework.NodeInfo
		if c := sched(hc); c != nil {
			ni = c.nodeInfo(int(int32(s[0])))
		}
		if ni == nil {
			s[0] = wasmhost.Unavailable
			return
		}
		encodeNodeResources(ni, wasmhost.Mem(mod, "node_resources", s[1], 80))
		s[0] = 80
	}},
	{Name: "node_scalar", Params: sig(i32, i32, i32, i32), Results: sig(i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		var ni *framework.NodeInfo
		if c := sched(hc); c != nil {
			ni = c.nodeInfo(int(int32(s[0])))
		}
		name := v1.ResourceName(wasmhost.Mem(mod, "node_scalar", s[2], s[3]))
		if ni == nil {
			s[0] = 0
			return
		}
		r := &ni.Allocatable
		if int32(s[1]) == 1 {
			r = &ni.Requested
		}
		s[0] = uint64(r.ScalarResources[name])
	}},
	{Name: "node_filter_code", Params: sig(i32), Results: sig(i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		i := int(int32(s[0]))
		if c == nil || c.Kind != PostFilter || i < 0 || i >= len(c.FilterCodes) {
			s[0] = wasmhost.Unavailable
			return
		}
		s[0] = uint64(uint32(c.FilterCodes[i]))
	}},
	{Name: "score_get", Params: sig(i32), Results: sig(i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		i := int(int32(s[0]))
		if c == nil || c.Kind != NormalizeScore || i < 0 || i >= len(c.Scores) {
			s[0] = 0
			return
		}
		s[0] = uint64(c.Scores[i])
	}},
	{Name: "node_status", Params: sig(i32, i32, i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		i, code := int(int32(s[0])), int32(s[1])
		reason := wasmhost.Mem(mod, "node_status", s[2], s[3])
		switch {
		case c == nil || c.Kind != Filter:
			hc.SetGarbage("node_status called from " + hc.Kind.String() + ", only Filter may call it")
		case i < 0 || i >= len(c.Nodes):
			hc.SetGarbage("node_status: node index " + strconv.Itoa(i) + " is outside the batch of " + strconv.Itoa(len(c.Nodes)))
		case code < CodeSuccess || code > CodeUnschedulableAndUnresolvable:
			hc.SetGarbage("node_status: status code " + strconv.Itoa(int(code)) + " is not one of 0..3")
		case code == CodeSuccess:
		default:
			r := wasmhost.Truncate(reason, wasmhost.MaxReason)
			if r == "" {
				// "0/5 nodes are available: 5 ." tells a user nothing; the plugin's name does.
				r = "rejected by plugin " + hc.Plugin()
			}
			c.Verdicts = append(c.Verdicts, Verdict{Index: i, Code: code, Reason: r})
		}
	}},
	{Name: "node_score", Params: sig(i32, i64), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		i := int(int32(s[0]))
		switch {
		case c == nil || (c.Kind != Score && c.Kind != NormalizeScore):
			hc.SetGarbage("node_score called from " + hc.Kind.String() + ", only Score and NormalizeScore may call it")
		case i < 0 || i >= len(c.Scores):
			hc.SetGarbage("node_score: node index " + strconv.Itoa(i) + " is outside the batch of " + strconv.Itoa(len(c.Scores)))
		default:
			c.Scores[i] = int64(s[1])
		}
	}},
	{Name: "prefilter_node", Params: sig(i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		name := wasmhost.Mem(mod, "prefilter_node", s[0], s[1])
		if c == nil || c.Kind != PreFilter {
			hc.SetGarbage("prefilter_node called from " + hc.Kind.String())
			return
		}
		c.PreFilterNodes = append(c.PreFilterNodes, string(name))
	}},
	{Name: "nominate", Params: sig(i32, i32), Fn: func(hc *wasmhost.Call, mod api.Module, s []uint64) {
		c := sched(hc)
		name := wasmhost.Mem(mod, "nominate", s[0], s[1])
		if c == nil || c.Kind != PostFilter {
			hc.SetGarbage("nominate called from " + hc.Kind.String())
			return
		}
		c.Nominated = string(name)
	}},
}

// stateBytes is a wasm plugin's cycle state value.
type stateBytes []byte

// Clone implements framework.StateData.
func (b stateBytes) Clone() framework.StateData { return append(stateBytes(nil), b...) }

func stateKey(plugin string, key []byte) framework.StateKey {
	return framework.StateKey("wasm/" + plugin + "/" + string(key))
}
