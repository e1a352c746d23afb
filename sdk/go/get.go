package sdk

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// Get returns the value at path in the new object, in gjson's path syntax
// (https://github.com/tidwall/gjson/blob/master/SYNTAX.md): "spec.hostNetwork",
// "metadata.labels.team", "spec.containers" (then ForEach over its elements),
// "spec.containers.#.image" (an array with each container's image). The host evaluates
// the path (object_get, docs/abi.md 4.6) and hands over only the result, so a policy
// that reads a few fields costs a fraction of decoding the object with Object or
// ObjectField: Go code runs about ten times slower inside wasm than natively, and the
// host's lookup runs natively (docs/benchmarks.md, "admission"). A path that is not
// there gives a Result whose Exists() is false; so does any path on DELETE and CONNECT.
//
// Keys with dots are escaped with a backslash: `metadata.labels.app\.kubernetes\.io/name`.
func (Request) Get(path string) gjson.Result {
	return get(path, func(p unsafe.Pointer, l int32, b unsafe.Pointer, c int32) int32 { return abi.ObjectGet(p, l, b, c) })
}

// OldGet is Get on the stored object (nothing on CREATE).
func (Request) OldGet(path string) gjson.Result {
	return get(path, func(p unsafe.Pointer, l int32, b unsafe.Pointer, c int32) int32 { return abi.OldObjectGet(p, l, b, c) })
}

func get(path string, fn func(p unsafe.Pointer, l int32, b unsafe.Pointer, c int32) int32) gjson.Result {
	pp, pl := strPtr(path)
	b, code := readVar(func(b unsafe.Pointer, c int32) int32 { return fn(pp, pl, b, c) })
	if code < 0 {
		return gjson.Result{}
	}
	return gjson.ParseBytes(b)
}
