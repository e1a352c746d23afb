package wasmhost

import (
	"context"
	"log/slog"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// HostModule is the import module name of ABI v1.
const HostModule = "wasmkube"

// Limits of docs/abi.md section 6 that are not configurable.
const (
	// MaxReason is the length a reason (status_reason, a per-node reason, a message) is
	// truncated to.
	MaxReason   = 1 << 10
	maxLogLine  = 4 << 10
	maxLogLines = 100
)

// The negative results of docs/abi.md section 2, as host function results.
var (
	NotFound    = Neg(-1)
	Unavailable = Neg(-2)
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

// I32 and I64 spell host function signatures.
const (
	I32 = api.ValueTypeI32
	I64 = api.ValueTypeI64
)

// coreFuncs are the host functions of every kind (docs/abi.md sections 4.2, 4.4, 4.5).
var coreFuncs = []HostFunc{
	{Name: "args", Params: []api.ValueType{i32, i32}, Results: []api.ValueType{i32}, Fn: func(c *Call, mod api.Module, s []uint64) {
		c.argsRead = true
		s[0] = WriteVar(mod, "args", s[0], s[1], c.inst.pool.args)
	}},
	{Name: "status_reason", Params: []api.ValueType{i32, i32}, Fn: func(c *Call, mod api.Module, s []uint64) {
		c.Reason = Truncate(Mem(mod, "status_reason", s[0], s[1]), MaxReason)
	}},
	{Name: "log", Params: []api.ValueType{i32, i32, i32}, Fn: func(c *Call, mod api.Module, s []uint64) {
		msg := Mem(mod, "log", s[1], s[2])
		c.inst.sink.line(logLevel(int32(s[0])), Truncate(msg, maxLogLine))
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
func (a *abi) instantiateHostModule(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(HostModule)
	for _, f := range a.funcs {
		fn := f.Fn
		b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, stack []uint64) {
			fn(instanceOf(ctx).call, mod, stack)
		}), f.Params, f.Results).Export(f.Name)
	}
	_, err := b.Instantiate(ctx)
	return err
}

// Neg encodes a negative i32 result.
func Neg(v int32) uint64 { return uint64(uint32(v)) }

// Mem returns the guest memory range [ptr, ptr+l) or traps the call with a bad-pointer
// error naming the host function fn.
func Mem(mod api.Module, fn string, ptr, l uint64) []byte {
	m := mod.Memory()
	b, ok := m.Read(uint32(ptr), uint32(l))
	if !ok {
		panic(&badPointerError{fn: fn, ptr: uint32(ptr), len: uint32(l), memSize: m.Size()})
	}
	return b
}

// WriteVar implements the buffer rule of docs/abi.md section 2: write val into (buf, cap)
// if it fits, and return its full length either way.
func WriteVar[T string | []byte](mod api.Module, fn string, buf, capacity uint64, val T) uint64 {
	if uint32(capacity) > 0 {
		dst := Mem(mod, fn, buf, capacity)
		if len(val) <= len(dst) {
			copy(dst, val)
		}
	}
	return uint64(uint32(len(val)))
}

// Lookup reads a key from guest memory and writes m[key] into (buf, cap), or returns -1.
func Lookup(mod api.Module, fn string, m map[string]string, keyPtr, keyLen, buf, capacity uint64) uint64 {
	key := Mem(mod, fn, keyPtr, keyLen)
	v, ok := m[string(key)]
	if !ok {
		return NotFound
	}
	return WriteVar(mod, fn, buf, capacity, v)
}

// Truncate returns b as a string of at most n bytes.
func Truncate(b []byte, n int) string {
	if len(b) > n {
		b = b[:n]
	}
	return string(b)
}

// Garbage is what a host function panics with to end the call as a garbage result right
// away (a value over a limit); the instance is discarded.
func Garbage(msg string) error { return &garbageError{msg: msg} }
