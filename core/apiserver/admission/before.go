package admission

import (
	"encoding/json"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
)

// BeforeMutation is called by a mutating plugin just before it changes a.Object in place:
// when the request is recorded, the object is kept (as JSON, once per request, at the first
// change) so that its record can show each patch's old values. When the request is not
// recorded it does nothing, so the chain makes no copy of objects unless the decision
// explorer is on. JSON, not a deep copy: a shallow copy would not do (built-in plugins append
// into the object's slices in place), and a deep copy, though cheaper to make, is an object
// graph the garbage collector scans in each of the ring's 10,000 records, where JSON is one
// pointer-free slice: measured, recording cost 2.47x the CPU of not recording with deep
// copies against 1.89x with JSON (docs/benchmarks.md, the explorer's section).
func (a *Attributes) BeforeMutation() {
	if a.trace == nil || a.trace.before != nil || a.Object == nil {
		return
	}
	if b, err := json.Marshal(a.Object); err == nil {
		a.trace.before = b
	}
}

// fillBefore sets the Before of each decision that carries a patch: the value at each
// operation's path in the object as it was just before that policy, found by replaying
// the patches in chain order on doc (the object before the first change). A Monitor
// policy's patch was not applied, so it is not replayed. Changes made by plugins that
// record no patch (the built-in defaults, say) are not in doc: a path they changed shows
// the value before them. A patch that no longer applies ends the replay; the decisions
// after it keep no Before rather than a wrong one.
func fillBefore(doc []byte, ps []explorerv1.PolicyDecision) {
	var cur any
	for i := range ps {
		d := &ps[i]
		if len(d.Patch) == 0 || doc == nil {
			continue
		}
		var ops []struct {
			Op   string `json:"op"`
			Path string `json:"path"`
			From string `json:"from"`
		}
		if json.Unmarshal(d.Patch, &ops) != nil {
			continue
		}
		if cur == nil {
			if json.Unmarshal(doc, &cur) != nil {
				return
			}
		}
		d.Before = make([]json.RawMessage, len(ops))
		for j, op := range ops {
			p := op.Path
			if op.Op == "move" || op.Op == "copy" {
				p = op.From
			}
			d.Before[j] = json.RawMessage("null")
			if v, ok := pointerGet(cur, p); ok {
				if b, err := json.Marshal(v); err == nil {
					d.Before[j] = b
				}
			}
		}
		if d.Mode == "Monitor" {
			continue
		}
		patch, err := jsonpatch.DecodePatch(d.Patch)
		if err != nil {
			return
		}
		if doc, err = patch.Apply(doc); err != nil {
			return
		}
		cur = nil
	}
}

// pointerGet is the value at JSON Pointer p (RFC 6901) in doc, as encoding/json decodes
// a document; ok is false when the path is not set.
func pointerGet(doc any, p string) (v any, ok bool) {
	if p == "" {
		return doc, true
	}
	if !strings.HasPrefix(p, "/") {
		return nil, false
	}
	v = doc
	for _, tok := range strings.Split(p[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch n := v.(type) {
		case map[string]any:
			if v, ok = n[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return nil, false
			}
			v = n[i]
		default:
			return nil, false
		}
	}
	return v, true
}
