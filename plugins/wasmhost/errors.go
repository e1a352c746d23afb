package wasmhost

import (
	"errors"
	"fmt"
)

// FailureReason classifies why a plugin call failed (docs/abi.md section 7).
type FailureReason string

// The failure reasons.
const (
	ReasonTrap       FailureReason = "trap"
	ReasonTimeout    FailureReason = "timeout"
	ReasonMemory     FailureReason = "memory limit"
	ReasonBadPointer FailureReason = "bad pointer"
	ReasonGarbage    FailureReason = "garbage result"
	ReasonExit       FailureReason = "proc_exit"
	ReasonError      FailureReason = "plugin error" // the plugin returned Error
	ReasonCanceled   FailureReason = "canceled"     // the caller gave up; not the plugin's fault
)

// CallError is a failed entry-point call. The instance that served it has already been
// replaced when the failure could have corrupted it.
type CallError struct {
	Plugin string
	Kind   *Kind
	Reason FailureReason
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("wasm plugin %s: %s: %s: %v", e.Plugin, e.Kind, e.Reason, e.Err)
}

func (e *CallError) Unwrap() error { return e.Err }

// LoadError is a module that cannot be used: missing file, not wasm, wrong ABI, bad args.
type LoadError struct {
	Plugin string
	Path   string
	Err    error
}

func (e *LoadError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %v", e.Plugin, e.Path, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// ErrABIVersion is wrapped by a LoadError for a module of another ABI version.
var ErrABIVersion = errors.New("unsupported ABI version")

// badPointerError is what host functions panic with when the guest passes a range outside
// its memory; wazero turns the panic into a call error that wraps it.
type badPointerError struct {
	fn       string
	ptr, len uint32
	memSize  uint32
}

func (e *badPointerError) Error() string {
	return fmt.Sprintf("host function %s: range [%#x, +%d) is outside guest memory (%d bytes)", e.fn, e.ptr, e.len, e.memSize)
}

// garbageError is recorded when the guest calls a result function with nonsense.
type garbageError struct{ msg string }

func (e *garbageError) Error() string { return e.msg }
