package admitwasm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// The typed route of a Mutate's patch. The JSON route (ApplyPatch with
// github.com/evanphx/json-patch, as upstream's mutating webhooks do) marshals the object,
// parses it into a tree, applies the operations, marshals the tree and decodes the result
// into the object's type: about 90 us for a pod, most of what a mutating policy costs the
// API server. Nearly every patch a policy sends is a few add, replace, remove and test
// operations on fields of the object's Go type, and those can be applied to a deep copy
// of the object directly, field by field through its json tags, decoding only each
// operation's value (a few us).
//
// The typed route only ever answers "here is the result" for operations it handles
// exactly as the JSON route would; for everything else (move and copy, paths through map
// values, interfaces or types with their own JSON encoding, case-insensitive or unknown
// member names, negative or malformed array indices, a target the JSON document would
// not have, any error) it declines and the JSON route decides, so that error messages,
// and results at the edges, are json-patch's own. TestTypedPatchMatchesJSONRoute and
// FuzzApplyPatch check the two routes agree.

// patchOp is one RFC 6902 operation.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from"`
	Value json.RawMessage `json:"value"` // nil when the operation has none
}

// parseOps reads a JSON Patch as encoding/json would decode it into []patchOp, with gjson
// (no reflection: a third of the typed route's cost went to decoding the operations).
// Member names are matched exactly, as json-patch does: a member spelt like one of the
// four in another case ("Path") makes it decline, as does anything encoding/json would
// refuse (not an array of objects, a member of the wrong type).
func parseOps(patch []byte) ([]patchOp, bool) {
	if !gjson.ValidBytes(patch) {
		return nil, false
	}
	arr := gjson.ParseBytes(patch)
	if !arr.IsArray() {
		return nil, false
	}
	ops := make([]patchOp, 0, 4)
	ok := true
	arr.ForEach(func(_, el gjson.Result) bool {
		if !el.IsObject() {
			ok = false
			return false
		}
		var op patchOp
		el.ForEach(func(k, v gjson.Result) bool {
			if strings.IndexByte(k.Raw, '\\') >= 0 {
				ok = false
				return false
			}
			str := func(dst *string) {
				switch v.Type {
				case gjson.String:
					*dst = v.String()
				case gjson.Null:
					*dst = ""
				default:
					ok = false
				}
			}
			switch name := k.String(); name {
			case "op":
				str(&op.Op)
			case "path":
				str(&op.Path)
			case "from":
				str(&op.From)
			case "value":
				op.Value = json.RawMessage(v.Raw)
			default:
				if strings.EqualFold(name, "op") || strings.EqualFold(name, "path") || strings.EqualFold(name, "from") || strings.EqualFold(name, "value") {
					ok = false
				}
			}
			return ok
		})
		ops = append(ops, op)
		return ok
	})
	return ops, ok
}

// applyTyped applies patch to a copy of obj; ok is false when the typed route declines
// (see above), and the JSON route must be used. obj is never changed.
//
// The copy is made on write, not deep: the root struct is copied, and each operation
// copies the pointers, slices and maps on its path (one level each: the elements they
// hold stay shared until a later step copies them in turn) before it changes anything,
// so the result shares with obj only what the patch leaves alone. A pod's DeepCopy was
// two thirds of a mutating policy's host cost, for a patch that touches one field.
func applyTyped(obj runtime.Object, patch []byte) (out runtime.Object, ok bool) {
	ops, ok := parseOps(patch)
	if !ok {
		return nil, false
	}
	src := reflect.ValueOf(obj)
	if src.Kind() != reflect.Pointer || src.IsNil() || src.Elem().Kind() != reflect.Struct {
		return nil, false
	}
	root := reflect.New(src.Elem().Type())
	root.Elem().Set(src.Elem())
	out, isObj := root.Interface().(runtime.Object)
	if !isObj {
		return nil, false
	}
	for i := range ops {
		if !applyOp(root.Elem(), &ops[i]) {
			return nil, false
		}
	}
	return out, true
}

func applyOp(root reflect.Value, op *patchOp) bool {
	switch op.Op {
	case "add", "replace", "test":
		if op.Value == nil {
			return false
		}
	case "remove":
	default:
		return false
	}
	tokens, ok := pointerTokens(op.Path)
	if !ok || len(tokens) == 0 || tokens[0] == "kind" || tokens[0] == "apiVersion" {
		return false
	}
	parent := root
	for _, t := range tokens[:len(tokens)-1] {
		if parent, ok = child(parent, t); !ok {
			return false
		}
	}
	last := tokens[len(tokens)-1]
	switch parent.Kind() {
	case reflect.Struct:
		f, ok := fieldByJSONName(parent, last)
		if !ok {
			return false
		}
		return leafOp(op, f, emitted(f.v, f.omitEmpty, f.omitZero), func(v reflect.Value) { f.v.Set(v) }, func() { f.v.Set(reflect.Zero(f.v.Type())) })
	case reflect.Map:
		if parent.IsNil() || parent.Type().Key().Kind() != reflect.String || hasOwnJSON(parent.Type()) {
			return false
		}
		key := reflect.ValueOf(last).Convert(parent.Type().Key())
		cur := parent.MapIndex(key)
		return leafOp(op, field{v: cur, t: parent.Type().Elem()}, cur.IsValid(),
			func(v reflect.Value) { parent.SetMapIndex(key, v) }, func() { parent.SetMapIndex(key, reflect.Value{}) })
	case reflect.Slice:
		if parent.IsNil() || !parent.CanSet() || hasOwnJSON(parent.Type()) || parent.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
		n := parent.Len()
		if last == "-" && op.Op == "add" {
			v, ok := decodeValue(op.Value, parent.Type().Elem())
			if !ok {
				return false
			}
			parent.Set(reflect.Append(parent, v))
			return true
		}
		i, ok := arrayIndex(last)
		if !ok || i > n || (i == n && op.Op != "add") {
			return false
		}
		if op.Op == "add" {
			v, ok := decodeValue(op.Value, parent.Type().Elem())
			if !ok {
				return false
			}
			grown := reflect.MakeSlice(parent.Type(), n+1, n+1)
			reflect.Copy(grown, parent.Slice(0, i))
			grown.Index(i).Set(v)
			reflect.Copy(grown.Slice(i+1, n+1), parent.Slice(i, n))
			parent.Set(grown)
			return true
		}
		el := parent.Index(i)
		return leafOp(op, field{v: el, t: el.Type()}, true, func(v reflect.Value) { el.Set(v) }, func() {
			shrunk := reflect.MakeSlice(parent.Type(), n-1, n-1)
			reflect.Copy(shrunk, parent.Slice(0, i))
			reflect.Copy(shrunk.Slice(i, n-1), parent.Slice(i+1, n))
			parent.Set(shrunk)
		})
	}
	return false
}

// leafOp applies op to a target that exists (in the JSON document) or not.
func leafOp(op *patchOp, f field, exists bool, set func(reflect.Value), remove func()) bool {
	switch op.Op {
	case "add", "replace":
		if op.Op == "replace" && !exists {
			return false
		}
		v, ok := decodeValue(op.Value, f.t)
		if !ok {
			return false
		}
		set(v)
	case "remove":
		if !exists {
			return false
		}
		remove()
	case "test":
		if !exists {
			return false
		}
		return sameJSON(f.v, op.Value)
	}
	return true
}

// child is the value at token t under v, if the JSON document has it there.
func child(v reflect.Value, t string) (reflect.Value, bool) {
	if hasOwnJSON(v.Type()) {
		return reflect.Value{}, false
	}
	switch v.Kind() {
	case reflect.Struct:
		f, ok := fieldByJSONName(v, t)
		if !ok || !emitted(f.v, f.omitEmpty, f.omitZero) {
			return reflect.Value{}, false
		}
		return deref(f.v)
	case reflect.Slice:
		i, ok := arrayIndex(t)
		if !ok || i >= v.Len() || v.Type().Elem().Kind() == reflect.Uint8 { // []byte is a base64 string
			return reflect.Value{}, false
		}
		return deref(v.Index(i))
	}
	// Map values cannot be changed in place; interfaces are what the JSON route is for.
	return reflect.Value{}, false
}

// deref follows pointers to a struct, slice or map the document has as an object or
// array (a nil one is null there, which has no members).
//
// On the way it copies what it passes through (applyTyped's copy on write): each pointer
// gets a new target and each slice or map a new backing store, set in place of the old
// in v's holder, which the caller has copied already (the root, or a step before).
func deref(v reflect.Value) (reflect.Value, bool) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() || hasOwnJSON(v.Type()) {
			return reflect.Value{}, false
		}
		if v.CanSet() {
			fresh := reflect.New(v.Type().Elem())
			fresh.Elem().Set(v.Elem())
			v.Set(fresh)
		}
		v = v.Elem()
	}
	switch {
	case v.Kind() == reflect.Slice && v.CanSet() && !v.IsNil():
		fresh := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(fresh, v)
		v.Set(fresh)
	case v.Kind() == reflect.Map && v.CanSet() && !v.IsNil():
		fresh := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			fresh.SetMapIndex(it.Key(), it.Value())
		}
		v.Set(fresh)
	}
	switch v.Kind() {
	case reflect.Struct:
		return v, true
	case reflect.Slice, reflect.Map:
		return v, !v.IsNil()
	}
	return reflect.Value{}, false
}

// decodeValue decodes an operation's value as the JSON route's final decode would: into
// a fresh value of type t, unknown fields refused.
func decodeValue(raw json.RawMessage, t reflect.Type) (reflect.Value, bool) {
	cp := copierOf(t)
	if cp == nil || len(raw) > maxMemoValue {
		return decodeValueUncached(raw, t)
	}
	k := decodedKey{t, string(raw)}
	v, hit := decodedValues.get(k)
	if !hit {
		var ok bool
		if v, ok = decodeValueUncached(raw, t); !ok {
			return reflect.Value{}, false
		}
		decodedValues.put(k, v)
	}
	return cp(v), true
}

// decodedValues memoizes decodeValue by type and JSON: a mutating policy sends the same
// values in every patch (default-resources' requests and limits), and encoding/json was
// half of the typed route's cost. Only values that can be copied exactly are kept
// (copierOf); every caller gets its own copy, so a patched object never shares memory
// with the memo or with another request's object.
var decodedValues = memo[decodedKey, reflect.Value]{max: 1024}

// maxMemoValue is the longest value JSON decodedValues keeps.
const maxMemoValue = 4 << 10

type decodedKey struct {
	t   reflect.Type
	raw string
}

// copierOf returns how to copy a value of type t deeply (its generated DeepCopyInto, or
// plain assignment for a type that holds no references), or nil when there is no exact
// copy: such values are decoded each time.
func copierOf(t reflect.Type) func(reflect.Value) reflect.Value {
	if c, ok := copiers.Load(t); ok {
		return c.(func(reflect.Value) reflect.Value)
	}
	var c func(reflect.Value) reflect.Value
	switch t.Kind() {
	case reflect.Bool, reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		c = func(v reflect.Value) reflect.Value { return v }
	default:
		pt := reflect.PointerTo(t)
		if m, ok := pt.MethodByName("DeepCopyInto"); ok && m.Type.NumIn() == 2 && m.Type.In(1) == pt && m.Type.NumOut() == 0 {
			c = func(v reflect.Value) reflect.Value {
				in, out := reflect.New(t), reflect.New(t)
				in.Elem().Set(v)
				m.Func.Call([]reflect.Value{in, out})
				return out.Elem()
			}
		}
	}
	copiers.Store(t, c)
	return c
}

var copiers sync.Map // reflect.Type -> func(reflect.Value) reflect.Value (nil: none)

func decodeValueUncached(raw json.RawMessage, t reflect.Type) (reflect.Value, bool) {
	p := reflect.New(t)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p.Interface()); err != nil || dec.More() {
		return reflect.Value{}, false
	}
	if !caseExact(raw, t) {
		return reflect.Value{}, false
	}
	return p.Elem(), true
}

// caseExact reports whether every member name in raw is spelt as the JSON name of a
// field of the structs reachable from t, or matches none of them in any case:
// encoding/json matches names without regard to case, and in the JSON route a
// differently spelt member stays beside the original and may override it. (A map key
// that happens to be a case variant of a field name, a label "Name", makes the typed
// route decline: the JSON route then decides, correctly and slower.)
func caseExact(raw json.RawMessage, t reflect.Type) bool {
	names := namesOf(t)
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(raw) {
			return false
		}
		str := raw[i+1 : j]
		k := j + 1
		for k < len(raw) && (raw[k] == ' ' || raw[k] == '\t' || raw[k] == '\n' || raw[k] == '\r') {
			k++
		}
		i = j
		if k >= len(raw) || raw[k] != ':' {
			continue // a string value, not a member name
		}
		if bytes.IndexByte(str, '\\') >= 0 {
			return false
		}
		if _, exact := names.exact[string(str)]; exact {
			continue
		}
		if _, folded := names.folded[strings.ToLower(string(str))]; folded {
			return false
		}
	}
	return true
}

// typeNames are the JSON field names of the structs reachable from a type, as spelt
// and lower-cased.
type typeNames struct{ exact, folded map[string]struct{} }

var namesCache sync.Map // reflect.Type -> *typeNames

func namesOf(t reflect.Type) *typeNames {
	if n, ok := namesCache.Load(t); ok {
		return n.(*typeNames)
	}
	n := &typeNames{exact: map[string]struct{}{}, folded: map[string]struct{}{}}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || hasOwnJSON(t) {
			return
		}
		seen[t] = true
		for name, f := range jsonFields(t) {
			n.exact[name] = struct{}{}
			n.folded[strings.ToLower(name)] = struct{}{}
			walk(f.typ)
		}
	}
	walk(t)
	namesCache.Store(t, n)
	return n
}

// sameJSON reports whether v marshals to the JSON value raw (compared as decoded values).
func sameJSON(v reflect.Value, raw json.RawMessage) bool {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return false
	}
	var a, w any
	if json.Unmarshal(b, &a) != nil || json.Unmarshal(raw, &w) != nil {
		return false
	}
	return equality.Semantic.DeepEqual(a, w)
}

// emitted reports whether encoding/json writes the field: always, unless omitempty and
// empty, or omitzero and zero (by its IsZero method when it has one, as metav1.Time).
func emitted(v reflect.Value, omitEmpty, omitZero bool) bool {
	if omitZero && zeroJSON(v) {
		return false
	}
	if !omitEmpty {
		return true
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0
	case reflect.Interface, reflect.Pointer:
		return !v.IsNil()
	}
	return true
}

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// zeroJSON is encoding/json's omitzero test: the type's IsZero method (on the value or
// its pointer, as metav1.Time's), else the Go zero value.
func zeroJSON(v reflect.Value) bool {
	t := v.Type()
	switch {
	case t.Implements(isZeroerType):
		if t.Kind() == reflect.Pointer && v.IsNil() {
			return true
		}
		return v.Interface().(isZeroer).IsZero()
	case reflect.PointerTo(t).Implements(isZeroerType):
		if !v.CanAddr() {
			c := reflect.New(t).Elem()
			c.Set(v)
			v = c
		}
		return v.Addr().Interface().(isZeroer).IsZero()
	}
	return v.IsZero()
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// hasOwnJSON reports whether t (or *t) encodes or decodes itself (Quantity, Time,
// IntOrString, RawExtension): its JSON shape is not its Go shape.
func hasOwnJSON(t reflect.Type) bool {
	if v, ok := ownJSONCache.Load(t); ok {
		return v.(bool)
	}
	v := implementsJSON(t)
	ownJSONCache.Store(t, v)
	return v
}

var ownJSONCache sync.Map // reflect.Type -> bool

func implementsJSON(t reflect.Type) bool {
	if t.Implements(jsonMarshaler) || t.Implements(jsonUnmarshaler) {
		return true
	}
	if t.Kind() != reflect.Pointer {
		p := reflect.PointerTo(t)
		return p.Implements(jsonMarshaler) || p.Implements(jsonUnmarshaler)
	}
	return false
}

// field is a struct field (or map value, slice element) the patch addresses.
type field struct {
	v                   reflect.Value
	t                   reflect.Type
	omitEmpty, omitZero bool
}

type jsonField struct {
	index               []int
	typ                 reflect.Type
	omitEmpty, omitZero bool
}

var fieldCache sync.Map // reflect.Type -> map[string]jsonField

// fieldByJSONName is the field of struct v named name in JSON, spelt exactly.
func fieldByJSONName(v reflect.Value, name string) (field, bool) {
	f, ok := jsonFields(v.Type())[name]
	if !ok {
		return field{}, false
	}
	fv := v
	for i, x := range f.index {
		if i > 0 {
			if fv.Kind() == reflect.Pointer {
				if fv.IsNil() {
					return field{}, false
				}
				fv = fv.Elem()
			}
		}
		fv = fv.Field(x)
	}
	return field{v: fv, t: f.typ, omitEmpty: f.omitEmpty, omitZero: f.omitZero}, true
}

// jsonFields are the JSON members of struct type t as encoding/json names them, embedded
// structs flattened; a name two fields claim at the same depth is left out (encoding/json
// drops it too), and so the typed route declines it.
func jsonFields(t reflect.Type) map[string]jsonField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]jsonField)
	}
	m := map[string]jsonField{}
	depth := map[string]int{}
	var walk func(t reflect.Type, index []int, d int)
	walk = func(t reflect.Type, index []int, d int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), index...), i)
			if sf.Anonymous && name == "" {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && !hasOwnJSON(et) {
					walk(et, idx, d+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if strings.Contains(","+opts+",", ",string,") {
				// Encoded as a string: the typed route does not decode those.
				m[name] = jsonField{}
				depth[name] = -1
				continue
			}
			if prev, ok := depth[name]; ok {
				if prev == d {
					m[name] = jsonField{} // ambiguous: declined below
				}
				if prev <= d {
					continue
				}
			}
			depth[name] = d
			m[name] = jsonField{index: idx, typ: sf.Type, omitEmpty: strings.Contains(","+opts+",", ",omitempty,"),
				omitZero: strings.Contains(","+opts+",", ",omitzero,")}
		}
	}
	walk(t, nil, 0)
	for k, f := range m {
		if f.typ == nil {
			delete(m, k)
		}
	}
	fieldCache.Store(t, m)
	return m
}

// pointerTokens splits an RFC 6901 JSON Pointer; ok is false for one that does not start
// with / (or is not empty) or has a bad escape.
func pointerTokens(p string) ([]string, bool) {
	if p == "" {
		return nil, true
	}
	if p[0] != '/' {
		return nil, false
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(s, "~") {
			for j := 0; j < len(s); j++ {
				if s[j] == '~' && (j+1 >= len(s) || (s[j+1] != '0' && s[j+1] != '1')) {
					return nil, false
				}
			}
			s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		}
		parts[i] = s
	}
	return parts, true
}

// arrayIndex parses an array index token: decimal digits, no leading zero.
func arrayIndex(t string) (int, bool) {
	if t == "" || (len(t) > 1 && t[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(t)
	return n, err == nil
}
