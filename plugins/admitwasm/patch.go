package admitwasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// checkPatch is the result check of Mutate: the patch set with set_patch must be a JSON
// array of RFC 6902 operations that applies to the object and leaves apiVersion, kind,
// name, namespace and uid alone, and the result must decode as the object's type. Any
// other patch is a garbage result (docs/abi.md section 4.6). On success Patched holds
// the new object.
func checkPatch(hc *wasmhost.Call) error {
	c := callOf(hc)
	if c == nil || c.Patch == nil {
		return nil
	}
	out, err := applyPatch(c.req.object, c.Attributes.Object, c.Attributes.Kind, c.Patch)
	if err != nil {
		return err
	}
	c.Patched = out
	return nil
}

// ApplyPatch applies a Mutate's JSON Patch to doc, the JSON of obj (an object of kind
// gvk), and returns the new object, of obj's type, or the reason the patch is garbage.
func ApplyPatch(doc []byte, obj runtime.Object, gvk schema.GroupVersionKind, patch []byte) (runtime.Object, error) {
	if doc == nil {
		return nil, errors.New("set_patch: the request has no object to patch")
	}
	return applyPatch(func() []byte { return doc }, obj, gvk, patch)
}

// applyPatch is ApplyPatch with the object's JSON made only when the JSON route needs
// it: the typed route (typedpatch.go) applies the usual patch to the object itself.
func applyPatch(doc func() []byte, obj runtime.Object, gvk schema.GroupVersionKind, patch []byte) (runtime.Object, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, errors.New("set_patch: the request has no object to patch")
	}
	if t := bytes.TrimSpace(patch); len(t) == 0 || t[0] != '[' {
		return nil, errors.New("set_patch: the patch is not a JSON array of RFC 6902 operations")
	}
	if out, ok := applyTyped(obj, patch); ok {
		if err := sameIdentity(obj, out, gvk, gvk); err != nil {
			return nil, err
		}
		return out, nil
	}
	return applyJSON(doc(), obj, gvk, patch)
}

// applyJSON is the JSON route: json-patch applied to the object's JSON, decoded back
// into its type, as upstream's mutating webhooks do.
func applyJSON(doc []byte, obj runtime.Object, gvk schema.GroupVersionKind, patch []byte) (out runtime.Object, err error) {
	// json-patch v5.9 dereferences nil on some malformed operations (a test without a
	// value on the whole document: FuzzApplyPatch found it); a guest's patch must not
	// be able to panic the API server.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("set_patch: the patch does not apply: json-patch failed on it (%v)", r)
		}
	}()
	if doc == nil {
		return nil, errors.New("set_patch: the request has no object to patch")
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("set_patch: not a JSON Patch: %v", err)
	}
	if len(p) == 0 {
		return obj.DeepCopyObject(), nil
	}
	patched, err := p.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("set_patch: the patch does not apply: %v", err)
	}
	out = reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("set_patch: the patched object is not a valid %T: %v", obj, err)
	}
	// The decoded type information is the patched document's apiVersion and kind.
	if err := sameIdentity(obj, out, gvk, out.GetObjectKind().GroupVersionKind()); err != nil {
		return nil, err
	}
	// Keep the type information as the API server had it (typed objects carry none).
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out, nil
}

// sameIdentity refuses a patched object that is another object: apiVersion, kind
// (patched is the patched document's), name, namespace and uid may not change.
func sameIdentity(obj, out runtime.Object, gvk, patched schema.GroupVersionKind) error {
	was, is := metaOf(obj), metaOf(out)
	for _, f := range []struct{ name, was, is string }{
		{"apiVersion", gvk.GroupVersion().String(), patched.GroupVersion().String()},
		{"kind", gvk.Kind, patched.Kind},
		{"metadata.name", was.GetName(), is.GetName()},
		{"metadata.namespace", was.GetNamespace(), is.GetNamespace()},
		{"metadata.uid", string(was.GetUID()), string(is.GetUID())},
	} {
		if f.was != f.is {
			return fmt.Errorf("set_patch: the patch changes %s from %q to %q, which a mutation may not change", f.name, f.was, f.is)
		}
	}
	return nil
}
