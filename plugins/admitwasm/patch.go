package admitwasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// identity is what a patch may not change: which object it is.
type identity struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
		UID       string `json:"uid"`
	} `json:"metadata"`
}

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
	out, err := ApplyPatch(c.req.object(), c.Attributes.Object, c.Patch)
	if err != nil {
		return err
	}
	c.Patched = out
	return nil
}

// ApplyPatch applies a Mutate's JSON Patch to the JSON doc of obj and returns the new
// object, of obj's type, or the reason the patch is garbage.
func ApplyPatch(doc []byte, obj runtime.Object, patch []byte) (runtime.Object, error) {
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
	var before, after identity
	if err := json.Unmarshal(doc, &before); err != nil {
		return nil, fmt.Errorf("set_patch: %v", err)
	}
	if err := json.Unmarshal(patched, &after); err != nil {
		return nil, fmt.Errorf("set_patch: the patched object is not a JSON object: %v", err)
	}
	for _, f := range []struct{ name, was, is string }{
		{"apiVersion", before.APIVersion, after.APIVersion},
		{"kind", before.Kind, after.Kind},
		{"metadata.name", before.Metadata.Name, after.Metadata.Name},
		{"metadata.namespace", before.Metadata.Namespace, after.Metadata.Namespace},
		{"metadata.uid", before.Metadata.UID, after.Metadata.UID},
	} {
		if f.was != f.is {
			return nil, fmt.Errorf("set_patch: the patch changes %s from %q to %q, which a mutation may not change", f.name, f.was, f.is)
		}
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	dec := json.NewDecoder(bytes.NewReader(patched))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, fmt.Errorf("set_patch: the patched object is not a valid %T: %v", obj, err)
	}
	// Keep the type information as the API server had it (typed objects carry none).
	out.GetObjectKind().SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
	return out, nil
}
