// Command no-privileged is a wasmkube validating admission policy: a pod may not run
// privileged containers (init, app or ephemeral), mount hostPath volumes or use the node's
// network (hostNetwork), the three ways out of a pod's sandbox that the Pod Security
// Standards' baseline level forbids. Each violation is reported with its field path
// (spec.containers[0].securityContext.privileged: ...), so the API server answers 422
// Invalid naming the field; several violations are one line each (sdk.DenyFields, a 403).
package main

import (
	"strconv"

	"github.com/tidwall/gjson"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

func init() { validate.Register(Validate) }

// Validate refuses a pod that escapes its sandbox. Other kinds, and DELETE and CONNECT,
// are allowed.
func Validate(req sdk.Request) sdk.Status {
	if req.Kind() != "Pod" {
		return sdk.OK()
	}
	if op := req.Operation(); op != sdk.Create && op != sdk.Update {
		return sdk.OK()
	}
	// Only the fields checked are read (sdk.Request.Get): decoding the whole spec into
	// structs costs ten times as much inside wasm.
	return sdk.DenyFields(Violations(req.Get("spec"))...)
}

// Violations lists what a pod's spec may not do: hostNetwork, then privileged
// containers, then hostPath volumes.
func Violations(spec gjson.Result) []sdk.FieldError {
	var out []sdk.FieldError
	if spec.Get("hostNetwork").Bool() {
		out = append(out, sdk.FieldError{Path: "spec.hostNetwork", Msg: "the node's network is not allowed"})
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		i := 0
		spec.Get(list).ForEach(func(_, c gjson.Result) bool {
			if c.Get("securityContext.privileged").Bool() {
				out = append(out, sdk.FieldError{Path: "spec." + list + "[" + strconv.Itoa(i) + "].securityContext.privileged", Msg: "container " + c.Get("name").String() + " may not be privileged"})
			}
			i++
			return true
		})
	}
	i := 0
	spec.Get("volumes").ForEach(func(_, vol gjson.Result) bool {
		if hp := vol.Get("hostPath"); hp.Exists() && hp.Type != gjson.Null {
			out = append(out, sdk.FieldError{Path: "spec.volumes[" + strconv.Itoa(i) + "].hostPath", Msg: "volume " + vol.Get("name").String() + " may not mount a host path"})
		}
		i++
		return true
	})
	return out
}

func main() {}
