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
	out, err := ApplyPatch(c.req.object(), c.Attributes.Object, c.Attributes.Kind, c.Patch)
	if err != nil {
		return err
	}
	c.Patched = out
	return nil
}

// ApplyPatch applies a Mutate's JSON Patch to doc, the JSON of obj (an object of kind
// gvk), and returns the new object, of obj's type, or the reason the patch is garbage.
func ApplyPatch(doc []byte, obj runtime.Object, gvk schema.GroupVersionKind, patch []byte) (runtime.Object, error) {
	if obj == nil || doc == nil {
		return nil, errors.New("set_patch: the request has no object to patch")
	}
	if t := bytes.TrimSpace(patch); len(t) == 0 || t[0] != '[' {
		return nil, errors.New("set_patch: the patch is not a JSON array of RFC 6902 operations")
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
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("set_patch: the patched object is not a valid %T: %v", obj, err)
	}
	// Which object it is may not change. The decoded type information is the patched
	// document's apiVersion and kind.
	was, is := metaOf(obj), metaOf(out)
	for _, f := range []struct{ name, was, is string }{
		{"apiVersion", gvk.GroupVersion().String(), out.GetObjectKind().GroupVersionKind().GroupVersion().String()},
		{"kind", gvk.Kind, out.GetObjectKind().GroupVersionKind().Kind},
		{"metadata.name", was.GetName(), is.GetName()},
		{"metadata.namespace", was.GetNamespace(), is.GetNamespace()},
		{"metadata.uid", string(was.GetUID()), string(is.GetUID())},
	} {
		if f.was != f.is {
			return nil, fmt.Errorf("set_patch: the patch changes %s from %q to %q, which a mutation may not change", f.name, f.was, f.is)
		}
	}
	// Keep the type information as the API server had it (typed objects carry none).
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out, nil
}
