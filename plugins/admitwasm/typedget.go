package admitwasm

import (
	"encoding"
	"encoding/json"
	"reflect"

	"github.com/tidwall/gjson"
)

// typedGet answers object_get's gjson path on obj without marshalling all of it: the
// path's leading plain keys (metadata.labels, spec.containers) are followed through the
// Go value by its json tags, only the value they reach is marshalled, and gjson
// evaluates the rest of the path on that. A defaulted pod is about 1.5 KB of JSON and
// its containers a third of it, so `spec.containers.#.{name,resources}` costs a third
// of marshalling the pod. The answer is the one gjson gives on the whole document
// (TestTypedGetMatchesGJSON and FuzzTypedGet compare the two); ok is false where the
// typed walk declines (a root that marshals itself; kind and apiVersion, which the
// document gets from the request; a path whose first component is not a plain key), and then the caller uses the whole document.
func typedGet(obj any, path string) (res gjson.Result, ok bool) {
	cur := reflect.ValueOf(obj)
	if !cur.IsValid() || cur.Kind() != reflect.Pointer || cur.IsNil() || hasOwnJSON(cur.Type()) {
		return gjson.Result{}, false
	}
	first := true
	for {
		comp, rest, more := cutComponent(path)
		if !plainKey(comp) {
			if first {
				return gjson.Result{}, false // a query of the whole document
			}
			break
		}
		if first && (comp == "kind" || comp == "apiVersion") {
			return gjson.Result{}, false
		}
		first = false
		next, found, marshal := step(cur, comp)
		if marshal {
			break // cur encodes itself (Quantity, RawExtension): gjson reads its JSON
		}
		if !found {
			return gjson.Result{}, true
		}
		cur, path = next, rest
		if !more {
			b, err := marshalValue(cur)
			if err != nil {
				return gjson.Result{}, false
			}
			return gjson.ParseBytes(b), true
		}
	}
	b, err := marshalValue(cur)
	if err != nil {
		return gjson.Result{}, false
	}
	return gjson.GetBytes(b, path), true
}

// step follows one key from v as the JSON document would: found is false when the
// document has nothing there; marshal is true when v's JSON is not its Go shape, so the
// key must be looked up in its JSON.
func step(v reflect.Value, key string) (next reflect.Value, found, marshal bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.Kind() == reflect.Pointer && hasOwnJSON(v.Type()) {
			return v, false, true
		}
		if v.IsNil() {
			return reflect.Value{}, false, false // null has no members
		}
		v = v.Elem()
	}
	if hasOwnJSON(v.Type()) {
		return v, false, true
	}
	switch v.Kind() {
	case reflect.Struct:
		f, ok := fieldByJSONName(v, key)
		if !ok || !emitted(f.v, f.omitEmpty, f.omitZero) {
			return reflect.Value{}, false, false
		}
		return f.v, true, false
	case reflect.Map:
		kt := v.Type().Key()
		if kt.Kind() != reflect.String || kt.Implements(textMarshaler) || reflect.PointerTo(kt).Implements(textMarshaler) {
			return v, false, true
		}
		mv := v.MapIndex(reflect.ValueOf(key).Convert(kt))
		if !mv.IsValid() {
			return reflect.Value{}, false, false
		}
		return mv, true, false
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v, false, true // []byte is a base64 string
		}
		i, ok := arrayIndex(key)
		if !ok || i >= v.Len() {
			return reflect.Value{}, false, false
		}
		return v.Index(i), true, false
	}
	return reflect.Value{}, false, false // a string, number or bool has no members
}

var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// marshalValue is encoding/json's encoding of v as part of its document: through its
// address when it has one, so that methods on the pointer apply as they do there.
func marshalValue(v reflect.Value) ([]byte, error) {
	if v.CanAddr() {
		return json.Marshal(v.Addr().Interface())
	}
	return json.Marshal(v.Interface())
}

// cutComponent splits a gjson path at its first dot.
func cutComponent(path string) (comp, rest string, more bool) {
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			return path[:i], path[i+1:], true
		}
	}
	return path, "", false
}

// plainKey reports whether a path component is a literal key to gjson: letters, digits,
// '_', '-' and '/' only (no escapes, wildcards, queries, modifiers, pipes or multipaths),
// and not an index with a leading zero.
func plainKey(c string) bool {
	if c == "" || (len(c) > 1 && c[0] == '0') {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '/') {
			return false
		}
	}
	return true
}
