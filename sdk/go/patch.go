package sdk

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Patch is an RFC 6902 JSON Patch under construction: the changes a Mutate policy makes to
// the new object. Operations are applied by the host in the order they were added; the
// host refuses (as a garbage result) a patch that does not apply or that changes apiVersion,
// kind, metadata.name, metadata.namespace or metadata.uid.
//
// Paths are RFC 6901 JSON Pointers ("/spec/containers/0/resources"); build them with
// Pointer when a token may contain "/" or "~" (label keys such as app.kubernetes.io/name).
// Values are marshalled with encoding/json; a json.RawMessage that is valid JSON is copied
// as it is, so a policy can marshal a constant value once (in OnInit) instead of per call.
// A value that cannot be marshalled or a malformed path is remembered in Err, and the
// mutate package then reports the call as an Error instead of sending a partial patch.
type Patch struct {
	buf []byte // the operations so far, each a JSON object, comma-separated, no brackets
	n   int
	err error
}

// Add adds value at path: a new member of an object, or an element inserted before index
// n of an array ("/spec/containers/0/env/-" appends). The parent must exist.
func (p *Patch) Add(path string, value any) { p.op("add", path, value, true) }

// Replace replaces the value at path, which must exist.
func (p *Patch) Replace(path string, value any) { p.op("replace", path, value, true) }

// Remove removes the value at path, which must exist.
func (p *Patch) Remove(path string) { p.op("remove", path, nil, false) }

// Test makes the whole patch fail to apply unless the value at path equals value.
func (p *Patch) Test(path string, value any) { p.op("test", path, value, true) }

func (p *Patch) op(op, path string, value any, hasValue bool) {
	if p.err != nil {
		return
	}
	if path != "" && path[0] != '/' {
		p.err = fmt.Errorf("patch %s %q: a JSON Pointer is empty or starts with /", op, path)
		return
	}
	start := len(p.buf)
	if p.n > 0 {
		p.buf = append(p.buf, ',')
	}
	p.buf = append(p.buf, `{"op":"`...)
	p.buf = append(p.buf, op...)
	p.buf = append(p.buf, `","path":`...)
	p.buf = appendJSONString(p.buf, path)
	if hasValue {
		p.buf = append(p.buf, `,"value":`...)
		if raw, ok := value.(json.RawMessage); ok && json.Valid(raw) {
			// Already JSON (a value marshalled once in OnInit): copied, not re-encoded.
			p.buf = append(p.buf, raw...)
		} else {
			v, err := json.Marshal(value)
			if err != nil {
				p.buf = p.buf[:start]
				p.err = fmt.Errorf("patch %s %s: %w", op, path, err)
				return
			}
			p.buf = append(p.buf, v...)
		}
	}
	p.buf = append(p.buf, '}')
	p.n++
}

// Len is the number of operations.
func (p *Patch) Len() int { return p.n }

// Err is the first error of the operations added (a value json.Marshal refused, a malformed
// path); the operation that failed and every later one were not added.
func (p *Patch) Err() error { return p.err }

// Bytes returns the patch as a JSON array ("[]" when it is empty), in a new slice.
func (p *Patch) Bytes() []byte {
	out := make([]byte, 0, len(p.buf)+2)
	out = append(out, '[')
	out = append(out, p.buf...)
	return append(out, ']')
}

// Reset empties the patch and keeps its buffer for reuse.
func (p *Patch) Reset() { p.buf, p.n, p.err = p.buf[:0], 0, nil }

// Pointer builds an RFC 6901 JSON Pointer from reference tokens, escaping "~" as "~0" and
// "/" as "~1" in each: Pointer("metadata", "labels", "app.kubernetes.io/name") is
// "/metadata/labels/app.kubernetes.io~1name". Array indices are tokens too ("0", "-").
func Pointer(tokens ...string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(EscapeToken(t))
	}
	return b.String()
}

// pointerEscaper is RFC 6901's escaping; "~" must become "~0" before "/" becomes "~1", which
// a single-pass Replacer does by construction.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// EscapeToken escapes one reference token of a JSON Pointer ("~" to "~0", "/" to "~1").
func EscapeToken(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return pointerEscaper.Replace(token)
}

// appendJSONString appends s as a JSON string. Pointers are nearly always plain ASCII,
// copied as they are; anything else goes through encoding/json (reflection is slow
// inside wasm, and this runs for every operation).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
