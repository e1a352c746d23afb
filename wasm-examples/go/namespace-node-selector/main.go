// Command namespace-node-selector is a context-aware wasmkube validating admission policy:
// a pod may use only the nodeSelector values that its namespace allows. By default the
// pod's topology.kubernetes.io/zone selector must be one of the zones listed, separated by
// dots, in its namespace's label wasmkube.io/allowed-zones ("zone-a.zone-b": label values
// cannot hold commas). A namespace without the label restricts nothing, and neither does a
// pod that does not select the key.
//
// It reads the namespace from the API server's watch cache through sdk/go/objects, so
// its config must grant `capabilities: [namespaces]`; without the grant it does not load.
package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/objects"
	"github.com/wasmkube/wasmkube/sdk/go/validate"
)

// Args are the policy's args: which namespace label lists the allowed values of which
// nodeSelector key.
type Args struct {
	// Selectors maps a nodeSelector key to the namespace label that lists its allowed
	// values, dot-separated.
	Selectors map[string]string `json:"selectors"`
}

// DefaultSelectors apply without args.
var DefaultSelectors = map[string]string{"topology.kubernetes.io/zone": "wasmkube.io/allowed-zones"}

var selectors = DefaultSelectors

func init() {
	sdk.OnInit(configure)
	validate.Register(Validate)
}

func configure() error {
	if len(sdk.Args()) == 0 {
		return nil
	}
	var a Args
	if err := sdk.DecodeArgs(&a); err != nil {
		return err
	}
	if len(a.Selectors) == 0 {
		return errors.New(`args.selectors: map at least one nodeSelector key to a namespace label, e.g. {"selectors": {"topology.kubernetes.io/zone": "wasmkube.io/allowed-zones"}}`)
	}
	for k, l := range a.Selectors {
		if k == "" || l == "" {
			return fmt.Errorf("args.selectors[%q]: the key and the label must not be empty", k)
		}
	}
	selectors = a.Selectors
	return nil
}

// Namespace is the part of a namespace the policy reads.
type Namespace struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
}

// Validate refuses a pod whose nodeSelector uses a value its namespace does not allow.
func Validate(req sdk.Request) sdk.Status {
	if req.Kind() != "Pod" {
		return sdk.OK()
	}
	if op := req.Operation(); op != sdk.Create && op != sdk.Update {
		return sdk.OK()
	}
	var nodeSelector map[string]string
	if err := req.ObjectField(&nodeSelector, "spec", "nodeSelector"); err != nil {
		return sdk.Errorf("namespace-node-selector: %v", err)
	}
	if !selects(nodeSelector, selectors) {
		return sdk.OK() // nothing to check: the namespace is not read at all
	}
	nsName := req.Namespace()
	var ns Namespace
	if err := objects.GetInto("namespaces", nsName, &ns); err != nil {
		return sdk.Errorf("namespace-node-selector: read the pod's namespace: %v", err)
	}
	return sdk.DenyFields(Check(nodeSelector, nsName, ns.Metadata.Labels, selectors)...)
}

func selects(nodeSelector, selectors map[string]string) bool {
	for k := range selectors {
		if _, ok := nodeSelector[k]; ok {
			return true
		}
	}
	return false
}

// Check lists the nodeSelector entries that the namespace's labels do not allow, in key
// order.
func Check(nodeSelector map[string]string, namespace string, nsLabels, selectors map[string]string) []sdk.FieldError {
	var out []sdk.FieldError
	for _, key := range slices.Sorted(maps.Keys(selectors)) {
		value, ok := nodeSelector[key]
		if !ok {
			continue
		}
		label := selectors[key]
		list, restricted := nsLabels[label]
		if !restricted {
			continue
		}
		allowed := Allowed(list)
		if slices.Contains(allowed, value) {
			continue
		}
		msg := fmt.Sprintf("%s is not allowed in namespace %s (its label %s allows %s)", value, namespace, label, strings.Join(allowed, ", "))
		if len(allowed) == 0 {
			msg = fmt.Sprintf("%s is not allowed in namespace %s (its label %s allows no value)", value, namespace, label)
		}
		out = append(out, sdk.FieldError{Path: "spec.nodeSelector[" + key + "]", Msg: msg})
	}
	return out
}

// Allowed splits a namespace label's value into the values it allows.
func Allowed(list string) []string {
	var out []string
	for _, v := range strings.Split(list, ".") {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

func main() {}
