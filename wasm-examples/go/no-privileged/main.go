// Command no-privileged is a wasmkube validating admission policy: a pod may not run
// privileged containers (init, app or ephemeral), mount hostPath volumes or use the node's
// network (hostNetwork), the three ways out of a pod's sandbox that the Pod Security
// Standards' baseline level forbids. Each violation is reported with its field path
// (spec.containers[0].securityContext.privileged: ...), so the API server answers 422
// Invalid naming the field; several violations are one line each (sdk.DenyFields, a 403).
package main

import (
	"fmt"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

func init() { validate.Register(Validate) }

// Spec is the part of a pod's spec the policy reads.
type Spec struct {
	HostNetwork         bool        `json:"hostNetwork"`
	InitContainers      []Container `json:"initContainers"`
	Containers          []Container `json:"containers"`
	EphemeralContainers []Container `json:"ephemeralContainers"`
	Volumes             []struct {
		Name     string    `json:"name"`
		HostPath *struct{} `json:"hostPath"`
	} `json:"volumes"`
}

// Container is the part of a container the policy reads.
type Container struct {
	Name            string `json:"name"`
	SecurityContext *struct {
		Privileged *bool `json:"privileged"`
	} `json:"securityContext"`
}

// Validate refuses a pod that escapes its sandbox. Other kinds, and DELETE and CONNECT,
// are allowed.
func Validate(req sdk.Request) sdk.Status {
	if req.Kind() != "Pod" {
		return sdk.OK()
	}
	if op := req.Operation(); op != sdk.Create && op != sdk.Update {
		return sdk.OK()
	}
	var spec Spec // only the spec is decoded: metadata is most of a pod's JSON
	if err := req.ObjectField(&spec, "spec"); err != nil {
		return sdk.Errorf("no-privileged: %v", err)
	}
	return sdk.DenyFields(Violations(&spec)...)
}

// Violations lists what pod may not do: hostNetwork, then privileged containers, then
// hostPath volumes.
func Violations(spec *Spec) []sdk.FieldError {
	var out []sdk.FieldError
	if spec.HostNetwork {
		out = append(out, sdk.FieldError{Path: "spec.hostNetwork", Msg: "the node's network is not allowed"})
	}
	for _, list := range []struct {
		field      string
		containers []Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}, {"ephemeralContainers", spec.EphemeralContainers}} {
		for i, c := range list.containers {
			if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				out = append(out, sdk.FieldError{Path: fmt.Sprintf("spec.%s[%d].securityContext.privileged", list.field, i), Msg: "container " + c.Name + " may not be privileged"})
			}
		}
	}
	for i, vol := range spec.Volumes {
		if vol.HostPath != nil {
			out = append(out, sdk.FieldError{Path: fmt.Sprintf("spec.volumes[%d].hostPath", i), Msg: "volume " + vol.Name + " may not mount a host path"})
		}
	}
	return out
}

func main() {}
