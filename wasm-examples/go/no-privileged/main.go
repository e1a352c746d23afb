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
	// Only the fields checked are read, each by a path the host evaluates
	// (sdk.Request.Get): decoding the spec into structs inside wasm costs ten times as
	// much.
	return sdk.DenyFields(Violations(req.Get)...)
}

// Violations lists what a pod may not do, reading its fields with get: hostNetwork,
// then privileged containers, then hostPath volumes.
func Violations(get func(path string) gjson.Result) []sdk.FieldError {
	var out []sdk.FieldError
	if get("spec.hostNetwork").Bool() {
		out = append(out, sdk.FieldError{Path: "spec.hostNetwork", Msg: "the node's network is not allowed"})
	}
	for _, list := range []string{"initContainers", "containers", "ephemeralContainers"} {
		// Each container's name and flag, in order: [{"name":"app"},{"name":"root","p":true}]
		// (a multipath keeps an element for every container; "#.securityContext.privileged"
		// alone would leave out those without one, and so lose the indexes).
		i := 0
		get("spec." + list + ".#.{name,p:securityContext.privileged}").ForEach(func(_, c gjson.Result) bool {
			if c.Get("p").Bool() {
				out = append(out, sdk.FieldError{Path: "spec." + list + "[" + strconv.Itoa(i) + "].securityContext.privileged", Msg: "container " + c.Get("name").String() + " may not be privileged"})
			}
			i++
			return true
		})
	}
	i := 0
	get("spec.volumes.#.{name,h:hostPath}").ForEach(func(_, v gjson.Result) bool {
		if v.Get("h").IsObject() {
			out = append(out, sdk.FieldError{Path: "spec.volumes[" + strconv.Itoa(i) + "].hostPath", Msg: "volume " + v.Get("name").String() + " may not mount a host path"})
		}
		i++
		return true
	})
	return out
}

func main() {}
