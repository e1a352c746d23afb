package sdk

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

var argsCache struct {
	read bool
	b    []byte
}

// Args returns the plugin's args (pluginConfig args) as JSON; nil when none were given.
// They never change for an instance, so they are read from the host once.
func Args() []byte {
	if !argsCache.read {
		argsCache.b, _ = readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.Args(b, c) })
		if len(argsCache.b) == 0 {
			argsCache.b = nil
		}
		argsCache.read = true
	}
	return argsCache.b
}

// DecodeArgs unmarshals the args into v; no args leave v unchanged.
func DecodeArgs(v any) error {
	b := Args()
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	return nil
}

var initFuncs []func() error

// OnInit registers f to run once per instance after load, with the args available. A
// non-nil error makes the plugin fail to load, with the error as reason: validate args here.
func OnInit(f func() error) { initFuncs = append(initFuncs, f) }

func runInit() int32 {
	for _, f := range initFuncs {
		if err := f(); err != nil {
			SetReason(err.Error())
			return int32(CodeError)
		}
	}
	return 0
}

// State is the plugin's cycle state: bytes the host keeps for the current pod's
// scheduling cycle, readable by whichever instance serves a later call of the cycle.
var State stateAPI

type stateAPI struct{}

// Get returns the bytes stored under key in this cycle.
func (stateAPI) Get(key string) ([]byte, bool) {
	kp, kl := strPtr(key)
	return readBytes(func(b unsafe.Pointer, c int32) int32 { return abi.StateGet(kp, kl, b, c) })
}

// Set stores value under key for the rest of the cycle. It returns false when the entry
// point has no cycle state.
func (stateAPI) Set(key string, value []byte) bool {
	kp, kl := strPtr(key)
	vp, vl := bytesPtr(value)
	return abi.StateSet(kp, kl, vp, vl) == 0
}
