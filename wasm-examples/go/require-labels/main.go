// Command require-labels is a wasmkube validating admission policy: an object the policy's
// rules match must carry every label its args list ({"labels": ["team"]}), or the request
// is refused with `pods "web" must carry label team`.
package main

import (
	"errors"
	"fmt"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

// Args are the policy's args.
type Args struct {
	Labels []string `json:"labels"`
}

var required []string

func init() {
	sdk.OnInit(configure)
	validate.Register(Validate)
}

// configure reads the args once per instance: a policy without labels to require is a
// configuration error, reported at load.
func configure() error {
	var a Args
	if err := sdk.DecodeArgs(&a); err != nil {
		return err
	}
	labels, err := CheckLabels(a.Labels)
	if err != nil {
		return err
	}
	required = labels
	return nil
}

// CheckLabels validates the args' label keys.
func CheckLabels(labels []string) ([]string, error) {
	if len(labels) == 0 {
		return nil, errors.New(`args.labels: at least one label key is required, e.g. {"labels": ["team"]}`)
	}
	for i, l := range labels {
		if strings.TrimSpace(l) == "" || strings.ContainsAny(l, " \t\n") {
			return nil, fmt.Errorf("args.labels[%d]: %q is not a label key", i, l)
		}
	}
	return labels, nil
}

// Validate refuses a CREATE or UPDATE whose object lacks a required label. DELETE and
// CONNECT carry no new object and are allowed.
func Validate(req sdk.Request) sdk.Status {
	if op := req.Operation(); op != sdk.Create && op != sdk.Update {
		return sdk.OK()
	}
	missing := Missing(required, func(k string) bool { _, ok := req.ObjectLabel(k); return ok })
	if len(missing) == 0 {
		return sdk.OK()
	}
	return sdk.Deny(Message(req.Resource(), objectName(req), missing))
}

// Missing returns the labels of required that has reports absent, in the args' order.
func Missing(required []string, has func(key string) bool) []string {
	var out []string
	for _, k := range required {
		if !has(k) {
			out = append(out, k)
		}
	}
	return out
}

// Message is the denial: `pods "web" must carry label team` (labels, when several).
func Message(resource, name string, missing []string) string {
	resource, _, _ = strings.Cut(resource, "/") // pods/status is still a pod
	what := "label " + missing[0]
	if len(missing) > 1 {
		what = "labels " + strings.Join(missing, ", ")
	}
	return fmt.Sprintf("%s %s must carry %s", resource, name, what)
}

// objectName is the quoted name, or for a CREATE with generateName the prefix it gave.
func objectName(req sdk.Request) string {
	if n := req.Name(); n != "" {
		return fmt.Sprintf("%q", n)
	}
	var gen string
	if req.ObjectField(&gen, "metadata", "generateName") == nil && gen != "" {
		return fmt.Sprintf("%q", gen+"*")
	}
	return `""`
}

func main() {}
