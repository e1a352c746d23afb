// Package jsonscan finds one value in a JSON document without decoding the rest. Go's
// encoding/json scans a document twice (a validity check, then the decode) through a
// function pointer per byte, which costs about 0.2 ms per KiB in a wasm guest; a policy
// that needs a pod's spec should not pay for its managedFields and annotations. Documents
// come from the host, which marshals them with encoding/json, so they are valid JSON; on a
// malformed one Find stops at the end of the input and reports the value absent.
package jsonscan

import (
	"bytes"
	"encoding/json"
)

// Find returns the raw value at path (a key per level of nested objects) in doc; ok is
// false when a key is absent or a value on the way is not an object. No path is the
// whole document.
func Find(doc []byte, path ...string) (value []byte, ok bool) {
	v := doc
	for _, key := range path {
		if v, ok = member(v, key); !ok {
			return nil, false
		}
	}
	s := skipSpace(v, 0)
	e, ok := skipValue(v, s)
	if !ok {
		return nil, false
	}
	return v[s:e], true
}

// member returns the raw value of key in the object v.
func member(v []byte, key string) ([]byte, bool) {
	i := skipSpace(v, 0)
	if i >= len(v) || v[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(v, i)
		if i >= len(v) || v[i] != '"' {
			return nil, false // '}' (the end of the object) or malformed
		}
		ks := i
		ke, ok := skipString(v, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(v, ke)
		if i >= len(v) || v[i] != ':' {
			return nil, false
		}
		vs := skipSpace(v, i+1)
		ve, ok := skipValue(v, vs)
		if !ok {
			return nil, false
		}
		if keyIs(v[ks:ke], key) {
			return v[vs:ve], true
		}
		i = skipSpace(v, ve)
		if i < len(v) && v[i] == ',' {
			i++
		}
	}
}

// keyIs reports whether the quoted JSON string raw is key.
func keyIs(raw []byte, key string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner) == key // compiled without a copy
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && s == key
}

func skipSpace(v []byte, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\n' || v[i] == '\t' || v[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at v[i] == '"': the first
// quote after it that an even number of backslashes precedes (bytes.IndexByte is the
// runtime's fast loop, which matters for annotations of kilobytes).
func skipString(v []byte, i int) (int, bool) {
	for j := i + 1; j < len(v); {
		k := bytes.IndexByte(v[j:], '"')
		if k < 0 {
			break
		}
		q := j + k
		n := 0
		for b := q - 1; b > i && v[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		j = q + 1
	}
	return len(v), false
}

// skipValue returns the index after the value that starts at v[i].
func skipValue(v []byte, i int) (int, bool) {
	if i >= len(v) {
		return i, false
	}
	switch v[i] {
	case '"':
		return skipString(v, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(v); j++ {
			switch v[j] {
			case '"':
				e, ok := skipString(v, j)
				if !ok {
					return e, false
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(v), false
	}
	j := i // a number, true, false or null
	for j < len(v) && v[j] != ',' && v[j] != '}' && v[j] != ']' && v[j] != ' ' && v[j] != '\n' && v[j] != '\t' && v[j] != '\r' {
		j++
	}
	return j, j > i
}
