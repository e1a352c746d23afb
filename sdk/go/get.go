package sdk

import (
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

// objectCache holds the new and stored objects' JSON of the current call: Get and
// OldGet read each from the host once per call, however many paths a policy asks for.
type objectCache struct {
	call uint64
	buf  []byte
	ok   bool
}

var newObj, oldObj objectCache

func (c *objectCache) load(fill fillFunc) ([]byte, bool) {
	if c.call == abi.Call && c.buf != nil {
		return c.buf, c.ok
	}
	b, code := readVar(fill)
	c.call, c.ok = abi.Call, code >= 0
	c.buf = append(c.buf[:0], b...)
	return c.buf, c.ok
}

// Get returns the value at path in the new object, in gjson's path syntax
// (https://github.com/tidwall/gjson/blob/master/SYNTAX.md): "spec.hostNetwork",
// "metadata.labels.team", "spec.containers" (then ForEach over its elements),
// "spec.containers.#.image". Nothing else of the object is decoded, so a policy that
// reads a few fields costs a fraction of decoding the object into a struct with Object
// or ObjectField (docs/benchmarks.md, "admission"). A path that is not there gives a
// Result whose Exists() is false; so does any path on DELETE and CONNECT.
//
// Keys with dots are escaped with a backslash: `metadata.labels.app\.kubernetes\.io/name`.
func (Request) Get(path string) gjson.Result {
	b, ok := newObj.load(func(b unsafe.Pointer, c int32) int32 { return abi.ObjectJSON(b, c) })
	if !ok {
		return gjson.Result{}
	}
	return gjson.GetBytes(b, path)
}

// OldGet is Get on the stored object (nothing on CREATE).
func (Request) OldGet(path string) gjson.Result {
	b, ok := oldObj.load(func(b unsafe.Pointer, c int32) int32 { return abi.OldObjectJSON(b, c) })
	if !ok {
		return gjson.Result{}
	}
	return gjson.GetBytes(b, path)
}
