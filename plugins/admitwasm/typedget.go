package admitwasm

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strings"

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
			if comp == "#" && more {
				if r, ok := eachElement(cur, rest); ok {
					return r, true
				}
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
			if _, plain := plainKeys(rest); more && !plain && !arraySelection(rest) {
				// gjson can answer a later multipath or modifier even where this key
				// is missing (`0.{)` gives {}): let it decide.
				return gjson.Result{}, false
			}
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
	if path != "" && strings.IndexByte("!@{[", path[0]) >= 0 {
		// A literal, modifier or multipath means something else at the start of a
		// path than in its middle (`metadata.!0` is nothing, `!0` is 0): the whole
		// document decides.
		return gjson.Result{}, false
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

// member is one member of a multipath {key:path,...} (or the lone path of `#.path`):
// the key it is written under and its path of plain keys.
type member struct {
	key  string
	path []string
}

// eachElement answers `#.` + sel on the slice at v the way gjson does on its JSON, element
// by element, so that `spec.containers.#.{name,p:securityContext.privileged}` marshals a
// name and a bool per container, not the containers. sel is a path of plain keys
// (elements without it are left out, as gjson does) or one multipath of them with plain
// or no keys (every element gives an object of the members it has). ok is false for
// anything else, and for a value that is not a slice of structs: the caller then
// marshals v and lets gjson evaluate.
func eachElement(v reflect.Value, sel string) (gjson.Result, bool) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return gjson.Result{}, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Slice || v.IsNil() || hasOwnJSON(v.Type()) {
		return gjson.Result{}, false
	}
	et := v.Type().Elem()
	if et.Kind() != reflect.Struct || hasOwnJSON(et) || hasOwnJSON(reflect.PointerTo(et)) {
		return gjson.Result{}, false
	}
	sels, multi, ok := parseSelectors(sel)
	if !ok {
		return gjson.Result{}, false
	}
	b := make([]byte, 0, 64)
	b = append(b, '[')
	n := 0
	for i := 0; i < v.Len(); i++ {
		el := v.Index(i)
		if !multi {
			raw, found, ok := walkRaw(el, sels[0].path)
			if !ok {
				return gjson.Result{}, false
			}
			if found {
				if n > 0 {
					b = append(b, ',')
				}
				b = append(b, raw...)
				n++
			}
			continue
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		m := 0
		for _, s := range sels {
			raw, found, ok := walkRaw(el, s.path)
			if !ok {
				return gjson.Result{}, false
			}
			if !found {
				continue
			}
			if m > 0 {
				b = append(b, ',')
			}
			b = gjson.AppendJSONString(b, s.key)
			b = append(b, ':')
			b = append(b, raw...)
			m++
		}
		b = append(b, '}')
		n++
	}
	b = append(b, ']')
	return gjson.Result{Type: gjson.JSON, Raw: string(b)}, true
}

// parseSelectors reads a path of plain keys, or a multipath {a.b,key:c,...} of them; ok is
// false for any other syntax (escapes, quotes, wildcards, queries, modifiers, pipes,
// nested multipaths, a trailing path), which gjson then evaluates.
func parseSelectors(sel string) (sels []member, multi, ok bool) {
	if p, hit := parsedSelectors.get(sel); hit {
		return p.sels, p.multi, p.ok
	}
	sels, multi, ok = parseSelectorsUncached(sel)
	if len(sel) <= maxMemoPath {
		parsedSelectors.put(sel, parsedSelection{sels, multi, ok})
	}
	return sels, multi, ok
}

// parsedSelectors memoizes parseSelectors: a policy asks the same paths on every request,
// and splitting them was a tenth of object_get's cost. Callers never change the members.
var parsedSelectors = memo[string, parsedSelection]{max: 1024}

// maxMemoPath is the longest path parsedSelectors keeps.
const maxMemoPath = 256

type parsedSelection struct {
	sels      []member
	multi, ok bool
}

func parseSelectorsUncached(sel string) (sels []member, multi, ok bool) {
	if !strings.HasPrefix(sel, "{") {
		path, ok := plainKeys(sel)
		return []member{{path: path}}, false, ok
	}
	if len(sel) < 3 || sel[len(sel)-1] != '}' {
		return nil, false, false
	}
	for _, m := range strings.Split(sel[1:len(sel)-1], ",") {
		key, p, named := strings.Cut(m, ":")
		if !named {
			key, p = "", m
		} else if !plainKey(key) {
			return nil, false, false
		}
		path, ok := plainKeys(p)
		if !ok {
			return nil, false, false
		}
		if !named {
			key = path[len(path)-1] // gjson names a member by its path's last key
		}
		sels = append(sels, member{key: key, path: path})
	}
	return sels, true, true
}

// walkRaw follows path from v as typedGet does and returns the JSON of what it reaches;
// ok is false where it cannot say without the JSON of a value that marshals itself.
func walkRaw(v reflect.Value, path []string) (raw []byte, found, ok bool) {
	for i, key := range path {
		next, found, marshal := step(v, key)
		if marshal {
			b, err := marshalValue(v)
			if err != nil {
				return nil, false, false
			}
			r := gjson.GetBytes(b, strings.Join(path[i:], "."))
			if !r.Exists() {
				return nil, false, true
			}
			return []byte(r.Raw), true, true
		}
		if !found {
			return nil, false, true
		}
		v = next
	}
	b, err := marshalValue(v)
	if err != nil {
		return nil, false, false
	}
	return b, true, true
}

// marshalValue is encoding/json's encoding of v as part of its document: through its
// address when it has one, so that methods on the pointer apply as they do there.
func marshalValue(v reflect.Value) ([]byte, error) {
	if v.CanAddr() {
		return json.Marshal(v.Addr().Interface())
	}
	return json.Marshal(v.Interface())
}

// arraySelection reports whether path is `#`, `#.` and plain keys, or `#.{...}` of them
// (what eachElement evaluates): nothing when the array is missing.
func arraySelection(path string) bool {
	if path == "#" {
		return true
	}
	sel, ok := strings.CutPrefix(path, "#.")
	if !ok {
		return false
	}
	_, _, ok = parseSelectors(sel)
	return ok
}

// plainKeys splits path into its components; ok is false unless each is a plain key.
func plainKeys(path string) (keys []string, ok bool) {
	for {
		comp, rest, more := cutComponent(path)
		if !plainKey(comp) {
			return nil, false
		}
		keys = append(keys, comp)
		if !more {
			return keys, true
		}
		path = rest
	}
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
