// Package objects reads other objects for context-aware admission policies: the namespace
// of the request, a ConfigMap of settings, the other pods of the namespace (docs/abi.md
// section 4.6). Reads come from the API server's watch cache, not from etcd, and only for
// the resources the policy's config grants under `capabilities:`.
//
// Importing this package makes the module import wasmkube.get_object and
// wasmkube.list_objects (only those it calls), and a module that imports them loads only
// with a capabilities grant. Policies that read nothing but the request must not import it.
package objects

import (
	"encoding/json"
	"errors"
	"fmt"
	"unsafe"

	"github.com/wasmkube/wasmkube/sdk/go/internal/abi"
)

var (
	// ErrNotFound is returned (wrapped) by Get when the object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrForbidden is returned (wrapped) when the policy's config does not grant the
	// resource: add it to the policy's capabilities.
	ErrForbidden = errors.New("not granted to this policy (add the resource to its capabilities)")
)

// buf is this package's read buffer; a guest instance is single-threaded. It grows to the
// largest object or list read, as the SDK's own buffer does (docs/abi.md section 2).
var buf = make([]byte, 16<<10)

func read(fill func(b unsafe.Pointer, c int32) int32) ([]byte, int32) {
	n := fill(unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
	if n > int32(len(buf)) {
		c := len(buf)
		for c < int(n) {
			c *= 2
		}
		buf = make([]byte, c)
		n = fill(unsafe.Pointer(unsafe.SliceData(buf)), int32(len(buf)))
		if n > int32(len(buf)) {
			// The value changed during the call, which the ABI rules out.
			return nil, abi.Unavailable
		}
	}
	if n < 0 {
		return nil, n
	}
	return buf[:n], n
}

func readErr(what string, code int32) error {
	switch code {
	case abi.NotFound:
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	case abi.Forbidden:
		return fmt.Errorf("%s: %w", what, ErrForbidden)
	}
	return fmt.Errorf("%s: unavailable (host code %d)", what, code)
}

// Get returns the object of resource (the plural, lower-case name: "namespaces",
// "configmaps") named name, as Kubernetes JSON. Namespaced objects are read in the
// request's namespace only. The error wraps ErrNotFound or ErrForbidden.
func Get(resource, name string) ([]byte, error) {
	b, code := get(resource, name)
	if code < 0 {
		return nil, readErr(resource+" "+name, code)
	}
	return append([]byte(nil), b...), nil
}

// GetInto decodes the object Get would return into v, without copying its JSON.
func GetInto(resource, name string, v any) error {
	b, code := get(resource, name)
	if code < 0 {
		return readErr(resource+" "+name, code)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s %s: %w", resource, name, err)
	}
	return nil
}

func get(resource, name string) ([]byte, int32) {
	rp, rl := unsafe.Pointer(unsafe.StringData(resource)), int32(len(resource))
	np, nl := unsafe.Pointer(unsafe.StringData(name)), int32(len(name))
	return read(func(b unsafe.Pointer, c int32) int32 { return abi.GetObject(rp, rl, np, nl, b, c) })
}

// List returns {"items": [...]} with the objects of resource in the request's namespace
// (all of them for a cluster-scoped resource). The error wraps ErrForbidden.
func List(resource string) ([]byte, error) {
	b, code := list(resource)
	if code < 0 {
		return nil, readErr(resource, code)
	}
	return append([]byte(nil), b...), nil
}

// ListInto decodes the list List would return into v (a struct with an Items field, or a
// map), without copying its JSON.
func ListInto(resource string, v any) error {
	b, code := list(resource)
	if code < 0 {
		return readErr(resource, code)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode the list of %s: %w", resource, err)
	}
	return nil
}

func list(resource string) ([]byte, int32) {
	rp, rl := unsafe.Pointer(unsafe.StringData(resource)), int32(len(resource))
	return read(func(b unsafe.Pointer, c int32) int32 { return abi.ListObjects(rp, rl, b, c) })
}
