package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	jsonpatch "github.com/evanphx/json-patch/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/wasmkube/wasmkube/core/apiserver/registry"
)

// PATCH (upstream's handlers/patch.go): JSON patch (RFC 6902), JSON merge patch (RFC 7386)
// and strategic merge patch, applied to the current object's JSON and decoded back.
//
// The work a patch may cost is bounded before any of it is done, with upstream's limits:
// the body is at most maxBodyBytes (3 MiB, readBody), it nests at most maxPatchDepth
// levels (the depth encoding/json and sigs.k8s.io/json refuse beyond), and a JSON patch
// has at most maxJSONPatchOperations operations whose "copy"s add at most maxBodyBytes.
// Merge patches are applied by mergePatch, which is linear in the size of the object and
// the patch: the library's lazily decoding merge re-parses the rest of the document at each
// level, quadratic in the depth (8 s of CPU for one 10,000-deep patch, measured in
// docs/apiserver.md).
const (
	maxPatchDepth          = 10000
	maxJSONPatchOperations = 10000
)

// Patcher returns a function applying the request's patch to the current object.
func Patcher(rq *Request, res *registry.Resource) (func(cur runtime.Object) (runtime.Object, error), error) {
	body, err := ReadBody(rq.W, rq.Req)
	if err != nil {
		return nil, err
	}
	pt := patchType(rq.Req)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
		if err := checkPatchDepth(body, maxPatchDepth); err != nil {
			return nil, err
		}
	}
	var apply func(cur []byte) ([]byte, error)
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil, apierrors.NewBadRequest("malformed JSON patch: " + err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"the JSON patch has %d operations; the limit is %d", len(p), maxJSONPatchOperations))
		}
		opts := jsonpatch.NewApplyOptions()
		opts.AccumulatedCopySizeLimit = MaxBodyBytes
		apply = func(cur []byte) ([]byte, error) { return p.ApplyWithOptions(cur, opts) }
	case types.MergePatchType:
		patch, err := decodeJSONValue(body)
		if err != nil {
			return nil, apierrors.NewBadRequest("malformed merge patch: " + err.Error())
		}
		if _, ok := patch.(map[string]any); !ok {
			return nil, apierrors.NewBadRequest("malformed merge patch: it must be a JSON object")
		}
		apply = func(cur []byte) ([]byte, error) {
			doc, err := decodeJSONValue(cur)
			if err != nil {
				return nil, err
			}
			return json.Marshal(mergePatch(doc, patch))
		}
	case types.StrategicMergePatchType:
		if res.Custom != nil {
			return nil, errCustomStrategic(res)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, apierrors.NewBadRequest("malformed strategic merge patch: " + err.Error())
		}
		schemaObj := res.NewFunc()
		apply = func(cur []byte) ([]byte, error) { return strategicpatch.StrategicMergePatch(cur, body, schemaObj) }
	case types.ApplyYAMLPatchType:
		// Patch serves apply to objects and their status (apply.go); what reaches here
		// is an apply to another subresource (scale).
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GVR.GroupResource(), "",
			fmt.Sprintf("server-side apply of %s is not supported by wasmkube; use a merge patch (kubectl scale, kubectl patch)", res.Kind), 0, false)
	case types.ApplyCBORPatchType:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GVR.GroupResource(), "",
			"CBOR is not supported by wasmkube; send the apply configuration as YAML or JSON (application/apply-patch+yaml)", 0, false)
	default:
		return nil, apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", res.GVR.GroupResource(), "",
			fmt.Sprintf("unsupported patch type %q: use application/json-patch+json, application/merge-patch+json or application/strategic-merge-patch+json", pt), 0, false)
	}
	return func(cur runtime.Object) (runtime.Object, error) {
		curJSON, err := json.Marshal(cur)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		patched, err := apply(curJSON)
		if err != nil {
			return nil, apierrors.NewInvalid(res.GVK().GroupKind(), rq.Info.Name, field.ErrorList{
				field.Invalid(field.NewPath("patch"), truncate(string(body), 256), err.Error())})
		}
		obj := res.NewFunc()
		warnings, err := decodeInto(patched, res, res.Kind, res.GVR.GroupVersion(), obj, rq.FieldValidation)
		if err != nil {
			return nil, err
		}
		rq.addWarnings(warnings)
		return obj, nil
	}, nil
}

// truncate shortens s to at most n bytes for a message.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// checkPatchDepth refuses a body that nests objects and arrays more than max levels
// deep, with a 400 naming the limit, in one pass over the bytes (strings skipped).
// Malformed JSON is left to the decoders, which say where.
func checkPatchDepth(body []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return apierrors.NewBadRequest(fmt.Sprintf(
					"the patch nests objects and arrays more than %d levels deep; the limit is %d levels", max, max))
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// decodeJSONValue decodes one JSON value with numbers kept as written (no float64
// rounding of large integers).
func decodeJSONValue(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("unexpected data after the JSON value")
	}
	return v, nil
}

// mergePatch is RFC 7386's MergePatch(target, patch) on decoded JSON: an object patch
// sets each member (null removes it), recursively; anything else replaces the target.
// Each node of the patch and the target is visited once. target is modified.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
