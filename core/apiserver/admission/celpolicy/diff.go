package celpolicy

import (
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
)

// jsonOp is one JSON Patch (RFC 6902) operation.
type jsonOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// objectDiff is what changed from before to after, as JSON Patch operations: a
// MutatingAdmissionPolicy's mutations return the changed object, not the patch, so the
// decision explorer records their difference in the form a wasm policy's or a
// webhook's patch has. Objects compare as their JSON (apiVersion and kind aside); a list
// that changed length is replaced whole, one of the same length element by element.
func objectDiff(before, after runtime.Object) []jsonOp {
	if before == nil || after == nil {
		return nil
	}
	a, err := asJSON(before)
	if err != nil {
		return nil
	}
	b, err := asJSON(after)
	if err != nil {
		return nil
	}
	// a patcher's result may come back without its TypeMeta (a typed object decoded
	// again): the type is not the mutation's doing
	for _, m := range []any{a, b} {
		if m, ok := m.(map[string]any); ok {
			delete(m, "apiVersion")
			delete(m, "kind")
		}
	}
	var ops []jsonOp
	diffValues("", a, b, &ops)
	return ops
}

func asJSON(o runtime.Object) (any, error) {
	data, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	var v any
	return v, json.Unmarshal(data, &v)
}

func diffValues(path string, a, b any, ops *[]jsonOp) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + "/" + escapePointer(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				*ops = append(*ops, jsonOp{Op: "remove", Path: p})
			case !inA:
				*ops = append(*ops, jsonOp{Op: "add", Path: p, Value: raw(y)})
			default:
				diffValues(p, x, y, ops)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			diffValues(path+"/"+strconv.Itoa(i), av[i], bv[i], ops)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*ops = append(*ops, jsonOp{Op: "replace", Path: path, Value: raw(b)})
	}
}

// raw is v as JSON (null when it cannot be encoded, which a decoded document never is).
func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
