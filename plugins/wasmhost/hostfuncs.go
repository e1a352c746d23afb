package wasmhost

import (
	"context"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	v1 "k8s.io/api/core/v1"

	"github.com/wasmkube/wasmkube/core/scheduler/framework"
)

// HostModule is the import module name of ABI v1.
const HostModule = "wasmkube"

// Limits of docs/abi.md section 6 that are not configurable.
const (
	maxStateValue = 1 << 20
	maxReason     = 1 << 10
	maxLogLine    = 4 << 10
	maxLogLines   = 100
)

type instKey struct{}

// instanceOf returns the instance a host function was called from. Every call into a guest
// carries it in its context, so host functions need no lookup table and no lock.
func instanceOf(ctx context.Context) *instance {
	return ctx.Value(instKey{}).(*instance)
}

const (
	i32 = api.ValueTypeI32
	i64 = api.ValueTypeI64
)

type hostFunc struct {
	name            string
	params, results []api.ValueType
	fn              func(ctx context.Context, mod api.Module, stack []uint64)
}

// hostFuncs is the wasmkube module of ABI v1 (docs/abi.md section 4). The functions are
// stateless: everything they touch comes through ctx (the instance and its Call).
var hostFuncs = []hostFunc{
	{"pod_json", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := instanceOf(ctx)
		c := inst.call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "pod_json", s[0], s[1], inst.pool.m.host.objects.podJSON(c.Pod))
	}},
	{"pod_name", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "pod_name", s[0], s[1], c.Pod.Name)
	}},
	{"pod_namespace", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "pod_namespace", s[0], s[1], c.Pod.Namespace)
	}},
	{"pod_label", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = lookup(mod, "pod_label", c.Pod.Labels, s[0], s[1], s[2], s[3])
	}},
	{"pod_annotation", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = lookup(mod, "pod_annotation", c.Pod.Annotations, s[0], s[1], s[2], s[3])
	}},
	{"pod_requests", []api.ValueType{i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		out := mem(mod, "pod_requests", s[0], 40)
		encodePodRequests(c.requests(), out)
		s[0] = 40
	}},
	{"pod_scalar_names", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		if c.Pod == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "pod_scalar_names", s[0], s[1], c.requests().scalarNames)
	}},
	{"pod_scalar_request", []api.ValueType{i32, i32}, []api.ValueType{i64}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		name := mem(mod, "pod_scalar_request", s[0], s[1])
		if c.Pod == nil {
			s[0] = 0
			return
		}
		s[0] = uint64(c.requests().Scalar[v1.ResourceName(name)])
	}},
	{"args", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		s[0] = writeVar(mod, "args", s[0], s[1], instanceOf(ctx).pool.args)
	}},
	{"state_get", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := instanceOf(ctx)
		key := mem(mod, "state_get", s[0], s[1])
		if inst.call.State == nil {
			s[0] = neg(-2)
			return
		}
		d, ok := inst.call.State.Read(stateKey(inst.pool.m.name, key))
		b, isBytes := d.(stateBytes)
		if !ok || !isBytes {
			s[0] = neg(-1)
			return
		}
		s[0] = writeVar(mod, "state_get", s[2], s[3], []byte(b))
	}},
	{"state_set", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := instanceOf(ctx)
		key := mem(mod, "state_set", s[0], s[1])
		val := mem(mod, "state_set", s[2], s[3])
		if len(val) > maxStateValue {
			panic(&garbageError{msg: "state_set: value of " + itoa(int64(len(val))) + " bytes exceeds the 1 MiB limit"})
		}
		if inst.call.State == nil {
			s[0] = neg(-2)
			return
		}
		inst.call.State.Write(stateKey(inst.pool.m.name, key), stateBytes(append([]byte(nil), val...)))
		s[0] = 0
	}},
	{"node_json", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := instanceOf(ctx)
		n := inst.call.node(int(int32(s[0])))
		if n == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "node_json", s[1], s[2], inst.pool.m.host.objects.nodeJSON(n))
	}},
	{"node_name", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		name, ok := instanceOf(ctx).call.nodeName(int(int32(s[0])))
		if !ok {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "node_name", s[1], s[2], name)
	}},
	{"node_label", []api.ValueType{i32, i32, i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		n := instanceOf(ctx).call.node(int(int32(s[0])))
		if n == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = lookup(mod, "node_label", n.Labels, s[1], s[2], s[3], s[4])
	}},
	{"node_taints", []api.ValueType{i32, i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		n := instanceOf(ctx).call.node(int(int32(s[0])))
		if n == nil {
			s[0] = neg(-2)
			return
		}
		s[0] = writeVar(mod, "node_taints", s[1], s[2], encodeTaints(n.Spec.Taints))
	}},
	{"node_resources", []api.ValueType{i32, i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		ni := instanceOf(ctx).call.nodeInfo(int(int32(s[0])))
		if ni == nil {
			s[0] = neg(-2)
			return
		}
		encodeNodeResources(ni, mem(mod, "node_resources", s[1], 80))
		s[0] = 80
	}},
	{"node_scalar", []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}, func(ctx context.Context, mod api.Module, s []uint64) {
		ni := instanceOf(ctx).call.nodeInfo(int(int32(s[0])))
		name := v1.ResourceName(mem(mod, "node_scalar", s[2], s[3]))
		if ni == nil {
			s[0] = 0
			return
		}
		var r *framework.Resource = &ni.Allocatable
		if int32(s[1]) == 1 {
			r = &ni.Requested
		}
		s[0] = uint64(r.ScalarResources[name])
	}},
	{"node_filter_code", []api.ValueType{i32}, []api.ValueType{i32}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		i := int(int32(s[0]))
		if c.Kind != PostFilter || i < 0 || i >= len(c.FilterCodes) {
			s[0] = neg(-2)
			return
		}
		s[0] = uint64(uint32(c.FilterCodes[i]))
	}},
	{"score_get", []api.ValueType{i32}, []api.ValueType{i64}, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		i := int(int32(s[0]))
		if c.Kind != NormalizeScore || i < 0 || i >= len(c.Scores) {
			s[0] = 0
			return
		}
		s[0] = uint64(c.Scores[i])
	}},
	{"status_reason", []api.ValueType{i32, i32}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		c.Reason = truncate(mem(mod, "status_reason", s[0], s[1]), maxReason)
	}},
	{"node_status", []api.ValueType{i32, i32, i32, i32}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		i, code := int(int32(s[0])), int32(s[1])
		reason := mem(mod, "node_status", s[2], s[3])
		switch {
		case c.Kind != Filter:
			c.setGarbage("node_status called from " + c.Kind.String() + ", only Filter may call it")
		case i < 0 || i >= len(c.Nodes):
			c.setGarbage("node_status: node index " + itoa(int64(i)) + " is outside the batch of " + itoa(int64(len(c.Nodes))))
		case code < CodeSuccess || code > CodeUnschedulableAndUnresolvable:
			c.setGarbage("node_status: status code " + itoa(int64(code)) + " is not one of 0..3")
		case code == CodeSuccess:
		default:
			r := truncate(reason, maxReason)
			if r == "" {
				// "0/5 nodes are available: 5 ." tells a user nothing; the plugin's name does.
				r = "rejected by plugin " + instanceOf(ctx).pool.m.name
			}
			c.Verdicts = append(c.Verdicts, Verdict{Index: i, Code: code, Reason: r})
		}
	}},
	{"node_score", []api.ValueType{i32, i64}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		i := int(int32(s[0]))
		switch {
		case c.Kind != Score && c.Kind != NormalizeScore:
			c.setGarbage("node_score called from " + c.Kind.String() + ", only Score and NormalizeScore may call it")
		case i < 0 || i >= len(c.Scores):
			c.setGarbage("node_score: node index " + itoa(int64(i)) + " is outside the batch of " + itoa(int64(len(c.Scores))))
		default:
			c.Scores[i] = int64(s[1])
		}
	}},
	{"prefilter_node", []api.ValueType{i32, i32}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		name := mem(mod, "prefilter_node", s[0], s[1])
		if c.Kind != PreFilter {
			c.setGarbage("prefilter_node called from " + c.Kind.String())
			return
		}
		c.PreFilterNodes = append(c.PreFilterNodes, string(name))
	}},
	{"nominate", []api.ValueType{i32, i32}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		c := instanceOf(ctx).call
		name := mem(mod, "nominate", s[0], s[1])
		if c.Kind != PostFilter {
			c.setGarbage("nominate called from " + c.Kind.String())
			return
		}
		c.Nominated = string(name)
	}},
	{"log", []api.ValueType{i32, i32, i32}, nil, func(ctx context.Context, mod api.Module, s []uint64) {
		inst := instanceOf(ctx)
		msg := mem(mod, "log", s[1], s[2])
		inst.sink.line(logLevel(int32(s[0])), truncate(msg, maxLogLine))
	}},
}

func logLevel(l int32) slog.Level {
	switch {
	case l <= 0:
		return slog.LevelDebug
	case l == 1:
		return slog.LevelInfo
	case l == 2:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// instantiateHostModule defines the wasmkube module in rt.
func instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(HostModule)
	for _, f := range hostFuncs {
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(f.fn), f.params, f.results).Export(f.name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// hostFuncNames is the set of function names the wasmkube module exports.
var hostFuncNames = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range hostFuncs {
		m[f.name] = true
	}
	return m
}()

func neg(v int32) uint64 { return uint64(uint32(v)) }

// mem returns the guest memory range [ptr, ptr+l) or traps the call with a bad-pointer error.
func mem(mod api.Module, fn string, ptr, l uint64) []byte {
	m := mod.Memory()
	b, ok := m.Read(uint32(ptr), uint32(l))
	if !ok {
		panic(&badPointerError{fn: fn, ptr: uint32(ptr), len: uint32(l), memSize: m.Size()})
	}
	return b
}

// writeVar implements the buffer rule: write val into (buf, cap) if it fits, and return
// its full length either way.
func writeVar[T string | []byte](mod api.Module, fn string, buf, capacity uint64, val T) uint64 {
	if uint32(capacity) > 0 {
		dst := mem(mod, fn, buf, capacity)
		if len(val) <= len(dst) {
			copy(dst, val)
		}
	}
	return uint64(uint32(len(val)))
}

// lookup reads a key from guest memory and writes m[key] into (buf, cap), or returns -1.
func lookup(mod api.Module, fn string, m map[string]string, keyPtr, keyLen, buf, capacity uint64) uint64 {
	key := mem(mod, fn, keyPtr, keyLen)
	v, ok := m[string(key)]
	if !ok {
		return neg(-1)
	}
	return writeVar(mod, fn, buf, capacity, v)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// stateBytes is a wasm plugin's cycle state value.
type stateBytes []byte

// Clone implements framework.StateData.
func (b stateBytes) Clone() framework.StateData { return append(stateBytes(nil), b...) }

func stateKey(plugin string, key []byte) framework.StateKey {
	return framework.StateKey("wasm/" + plugin + "/" + string(key))
}
