package wasmhost

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/tetratelabs/wazero/api"
)

// Kind is one entry point of ABI v1 (docs/abi.md section 1.3). The host knows no kind of
// its own: each adapter (schedwasm, admitwasm, nodewasm) defines its kinds and hands them
// to the host in an Extension. Kinds are compared by identity (*Kind).
type Kind struct {
	// Name is the metric label and log key: "filter", "validate", "probe".
	Name string
	// Export is the guest export that implements the kind: "wasmkube_filter".
	Export string
	// Batched kinds take the batch size: (count i32) -> i32. Others are () -> i32.
	Batched bool
	// Codes are the status codes the kind may return besides Success and Error; any other
	// code is a garbage result.
	Codes []int32
	// Check, when set, validates the outputs of a call that returned Success (scores in
	// range, a well-formed patch). A non-nil error is a garbage result.
	Check func(c *Call) error
}

// String is the kind's name ("filter"), or "init" for the host's own calls.
func (k *Kind) String() string {
	if k == nil {
		return "init"
	}
	return k.Name
}

// Allowed reports whether the kind may return code.
func (k *Kind) Allowed(code int32) bool {
	return code == CodeSuccess || code == CodeError || slices.Contains(k.Codes, code)
}

func (k *Kind) params() []api.ValueType {
	if k.Batched {
		return []api.ValueType{i32}
	}
	return nil
}

// Kinds is a set of entry points, in the order the host's extensions list them.
type Kinds []*Kind

// Has reports whether k is in the set.
func (s Kinds) Has(k *Kind) bool { return slices.Contains(s, k) }

// Intersect returns the kinds of s that are also in t, in s's order.
func (s Kinds) Intersect(t Kinds) Kinds {
	var out Kinds
	for _, k := range s {
		if t.Has(k) {
			out = append(out, k)
		}
	}
	return out
}

// Status codes every kind may return (docs/abi.md section 1.3). The others (2, 3, 5) mean
// what the kind says: Unschedulable for a PreFilter, denied for a Validate, failure for a
// Probe; each adapter names them.
const (
	CodeSuccess int32 = 0
	CodeError   int32 = 1
)

// HostFunc is a function of the wasmkube host module.
type HostFunc struct {
	Name            string
	Params, Results []api.ValueType
	// Fn serves one guest call. c is the call in progress (c.Kind is nil during the host's
	// own calls: _initialize, the version check, wasmkube_init); stack holds the params
	// and receives the results, as in wazero's api.GoModuleFunc.
	Fn func(c *Call, mod api.Module, stack []uint64)
	// Capability, when set, is the grant (LoadOptions.Capabilities) a module needs to
	// import the function; a module that imports it without the grant fails to load.
	Capability string
}

// Extension is what one adapter adds to the host: its entry points and the host functions
// its calls read and write (as wazero's imports/wasi_snapshot_preview1 builds a host
// module). Adapters may list the same HostFunc value (the pod accessors every kind shares);
// two different functions under one name are an error.
type Extension struct {
	Name  string
	Kinds []*Kind
	Funcs []HostFunc
}

// abi is the union of a host's extensions, checked once in New.
type abi struct {
	kinds  Kinds
	funcs  []HostFunc
	byName map[string]*HostFunc
	names  []string // the extensions' names, for errors
	// allCaps are every capability of the host functions: a compiled module is checked
	// against the ABI once with all of them, and against each plugin's grants at its load.
	allCaps []string
}

func newABI(exts []Extension) (*abi, error) {
	a := &abi{byName: map[string]*HostFunc{}}
	add := func(ext string, f HostFunc) error {
		if prev, ok := a.byName[f.Name]; ok {
			same := slices.Equal(prev.Params, f.Params) && slices.Equal(prev.Results, f.Results) &&
				prev.Capability == f.Capability && reflect.ValueOf(prev.Fn).Pointer() == reflect.ValueOf(f.Fn).Pointer()
			if !same {
				return fmt.Errorf("wasm host: extension %s redefines host function %s", ext, f.Name)
			}
			return nil
		}
		a.funcs = append(a.funcs, f)
		a.byName[f.Name] = &a.funcs[len(a.funcs)-1]
		return nil
	}
	exports := map[string]bool{versionExport: true, initExport: true}
	for _, f := range coreFuncs {
		if err := add("core", f); err != nil {
			return nil, err
		}
	}
	for _, e := range exts {
		a.names = append(a.names, e.Name)
		for _, k := range e.Kinds {
			if a.kinds.Has(k) {
				continue
			}
			if exports[k.Export] {
				return nil, fmt.Errorf("wasm host: extension %s: export %s is already taken", e.Name, k.Export)
			}
			exports[k.Export] = true
			a.kinds = append(a.kinds, k)
		}
		for _, f := range e.Funcs {
			if err := add(e.Name, f); err != nil {
				return nil, err
			}
		}
	}
	// byName points into funcs, which append may have moved.
	for i := range a.funcs {
		a.byName[a.funcs[i].Name] = &a.funcs[i]
		if c := a.funcs[i].Capability; c != "" && !slices.Contains(a.allCaps, c) {
			a.allCaps = append(a.allCaps, c)
		}
	}
	return a, nil
}
