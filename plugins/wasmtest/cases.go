// Package wasmtest is the plugin author's kit as a library: case files that say what a
// module must answer (Run), the ABI contract checks beyond a smoke call (Conformance),
// and their reports as text, JSON and JUnit. `wasmkube plugin test` and `wasmkube plugin
// conformance` are thin calls into it, and a Go test of a plugin calls it the same way
// (RunFile in a test, with the module built by plugins/wasmbuild).
//
// The case file's schema is in docs/plugin-kit.md.
package wasmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// File is a case file: the plugin's args and its cases.
type File struct {
	// Args are the plugin's args for every case (pluginConfig[].args), unless a case
	// gives its own.
	Args  json.RawMessage `json:"args,omitempty"`
	Cases []Case          `json:"cases"`
}

// Case is one call of the plugin and what it must answer: a scheduling cycle (pod and
// nodes), an admission request (request), or a probe or preStop hook (hook and pod).
type Case struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
	// Pod is the pod being scheduled, or the pod a hook runs for.
	Pod *v1.Pod `json:"pod,omitempty"`
	// Request makes the case an admission request.
	Request *AdmissionRequest `json:"request,omitempty"`
	// Objects are what a context-aware admission policy reads with get_object and
	// list_objects (each granted by its resource).
	Objects []json.RawMessage `json:"objects,omitempty"`
	// Hook makes the case a probe or a preStop call against a fake pod endpoint.
	Hook *Hook `json:"hook,omitempty"`
	// Binding makes the case calls of the binding-cycle or queueing entry points.
	Binding *BindingCase `json:"binding,omitempty"`
	// Signature makes the case about wasmkube_sign: pods that must sign as Pod does (and
	// then get the same answers on Nodes) or differently.
	Signature *SignatureCase `json:"signature,omitempty"`
	// Nodes are the cluster's nodes, in the order the batch gets them.
	Nodes []v1.Node `json:"nodes"`
	// Pods are pods already on the nodes (spec.nodeName says which); they count in the
	// nodes' requested resources.
	Pods []v1.Pod `json:"pods,omitempty"`
	// Expect is what the cycle must produce; fields left out are not checked.
	Expect Expect `json:"expect"`
}

// Expect is the expected outcome of a scheduling cycle.
type Expect struct {
	// Feasible are the nodes that must pass PreFilter and Filter (exactly these).
	Feasible []string `json:"feasible,omitempty"`
	// Rejected maps each node that must be rejected to a substring of its reason ("" for
	// any reason). Nodes in neither list are not checked unless Feasible is given.
	Rejected map[string]string `json:"rejected,omitempty"`
	// Scores are the final scores (after NormalizeScore, when the module has one).
	Scores map[string]int64 `json:"scores,omitempty"`
	// Ranking is the order of the feasible nodes by score, highest first (ties in name
	// order); the listed nodes must come first, in this order.
	Ranking []string `json:"ranking,omitempty"`
	// Unschedulable is a substring of the reason PreFilter gives when it rejects the pod
	// outright.
	Unschedulable *string `json:"unschedulable,omitempty"`
	// Nominated is the node PostFilter must nominate when no node is feasible.
	Nominated string `json:"nominated,omitempty"`

	// Admission: Allowed is the verdict; Message a substring of the denial; Warnings
	// substrings of warnings the policy must give; Object fields the resulting object
	// must have (a subset: only the fields given are compared).
	Allowed  *bool            `json:"allowed,omitempty"`
	Message  string           `json:"message,omitempty"`
	Warnings []string         `json:"warnings,omitempty"`
	Object   *json.RawMessage `json:"object,omitempty"`

	// Hooks: Success is a probe's verdict (a preStop's is always "done"); Reason a
	// substring of its reason; Calls the least number of requests per path the plugin
	// must have made to the endpoint.
	Success *bool          `json:"success,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Calls   map[string]int `json:"calls,omitempty"`

	// Binding cycle (a case with binding; Reason applies too): Result is the last call's
	// verdict (Success, Unschedulable, UnschedulableAndUnresolvable, Wait, Error; for a
	// hint Queue or Skip); WaitGroup the group of a Wait; Released and RejectedWaiting the
	// UIDs of waiting pods the Permit allowed or rejected (exactly these); Counters the
	// plugin's shared counters after the calls (exactly these non-zero ones).
	Result          string           `json:"result,omitempty"`
	WaitGroup       *string          `json:"waitGroup,omitempty"`
	Released        []string         `json:"released,omitempty"`
	RejectedWaiting []string         `json:"rejectedWaiting,omitempty"`
	Counters        map[string]int64 `json:"counters,omitempty"`
}

// AdmissionRequest is an API request under admission.
type AdmissionRequest struct {
	// Operation is CREATE (the default), UPDATE, DELETE or CONNECT.
	Operation   string `json:"operation,omitempty"`
	SubResource string `json:"subResource,omitempty"`
	// Namespace defaults to the object's.
	Namespace string `json:"namespace,omitempty"`
	// User defaults to alice in system:authenticated.
	User *User `json:"userInfo,omitempty"`
	// Object and OldObject are Kubernetes objects with apiVersion and kind.
	Object    json.RawMessage `json:"object,omitempty"`
	OldObject json.RawMessage `json:"oldObject,omitempty"`
	DryRun    bool            `json:"dryRun,omitempty"`
}

// User is the caller of an admission request.
type User struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}

// Hook is one probe or preStop call.
type Hook struct {
	// Kind is startup, liveness, readiness or prestop.
	Kind string `json:"kind"`
	// Container defaults to the pod's first.
	Container string `json:"container,omitempty"`
	// TimeoutSeconds is the probe's timeoutSeconds, or the grace period left for a
	// preStop (default 1 and 30).
	TimeoutSeconds int `json:"timeoutSeconds,omitempty"`
	// Endpoint is what the fake pod serves on every port, by path; other paths are 404.
	Endpoint map[string]Response `json:"endpoint,omitempty"`
	// Down makes the pod refuse every connection (nothing listens).
	Down bool `json:"down,omitempty"`
}

// Response is one path of the fake pod endpoint. Sequence, when set, answers the calls
// in turn (the last one repeats), as a pod whose state changes.
type Response struct {
	Status   int               `json:"status,omitempty"`
	Body     string            `json:"body,omitempty"`
	Headers  map[string]string `json:"headers,omitempty"`
	DelayMs  int               `json:"delayMs,omitempty"`
	Sequence []Response        `json:"sequence,omitempty"`
}

// kind is what the case calls.
func (c *Case) kind() string {
	switch {
	case c.Request != nil:
		return "admission"
	case c.Hook != nil:
		return "hook"
	case c.Binding != nil:
		return "binding"
	case c.Signature != nil:
		return "signature"
	}
	return "scheduler"
}

// LoadFile reads a case file (YAML or JSON), refusing unknown fields with their path.
func LoadFile(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseFile(filepath.Base(path), b)
}

// ParseFile decodes a case file's bytes; name is used in errors.
func ParseFile(name string, b []byte) (*File, error) {
	var f File
	if err := yaml.UnmarshalStrict(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%s: cases: at least one case is required", name)
	}
	seen := map[string]bool{}
	for i := range f.Cases {
		c := &f.Cases[i]
		field := fmt.Sprintf("%s: cases[%d]", name, i)
		switch {
		case strings.TrimSpace(c.Name) == "":
			return nil, fmt.Errorf("%s.name: required", field)
		case seen[c.Name]:
			return nil, fmt.Errorf("%s.name: %q is used by an earlier case", field, c.Name)
		case c.Request != nil && c.Hook != nil:
			return nil, fmt.Errorf("%s (%s): request and hook: a case is one or the other", field, c.Name)
		case c.Signature != nil && (c.Request != nil || c.Hook != nil || c.Binding != nil):
			return nil, fmt.Errorf("%s (%s).signature: a signature case is a scheduling case (pod and nodes), not a request, hook or binding case", field, c.Name)
		case c.Request != nil:
			if len(c.Request.Object) == 0 && len(c.Request.OldObject) == 0 {
				return nil, fmt.Errorf("%s (%s).request.object: required (oldObject for a DELETE)", field, c.Name)
			}
		case c.Hook != nil:
			switch c.Hook.Kind {
			case "startup", "liveness", "readiness", "prestop":
			default:
				return nil, fmt.Errorf("%s (%s).hook.kind: %q must be startup, liveness, readiness or prestop", field, c.Name, c.Hook.Kind)
			}
			if c.Pod == nil {
				return nil, fmt.Errorf("%s (%s).pod: required", field, c.Name)
			}
		case c.Pod == nil:
			return nil, fmt.Errorf("%s (%s).pod: required", field, c.Name)
		case c.Binding != nil:
			if len(c.Binding.Points) == 0 {
				return nil, fmt.Errorf("%s (%s).binding.points: at least one of reserve, unreserve, permit, prebind, postbind, hint", field, c.Name)
			}
			for j, pt := range c.Binding.Points {
				if _, ok := pointKinds[pt]; !ok {
					return nil, fmt.Errorf("%s (%s).binding.points[%d]: %q is not one of reserve, unreserve, permit, prebind, postbind, hint", field, c.Name, j, pt)
				}
			}
			if c.Binding.Node.Name == "" {
				return nil, fmt.Errorf("%s (%s).binding.node.metadata.name: required", field, c.Name)
			}
		case c.Signature != nil:
			if len(c.Signature.Equal) == 0 && len(c.Signature.Differ) == 0 && !c.Signature.Unsignable {
				return nil, fmt.Errorf("%s (%s).signature: give equal or differ pods, or unsignable: true", field, c.Name)
			}
		case len(c.Nodes) == 0 && c.Expect.Unschedulable == nil:
			return nil, fmt.Errorf("%s (%s).nodes: at least one node is required", field, c.Name)
		}
		seen[c.Name] = true
		names := map[string]bool{}
		for j, n := range c.Nodes {
			if n.Name == "" {
				return nil, fmt.Errorf("%s (%s).nodes[%d].metadata.name: required", field, c.Name, j)
			}
			if names[n.Name] {
				return nil, fmt.Errorf("%s (%s).nodes[%d].metadata.name: %q is listed twice", field, c.Name, j, n.Name)
			}
			names[n.Name] = true
		}
		for j, p := range c.Pods {
			if !names[p.Spec.NodeName] {
				return nil, fmt.Errorf("%s (%s).pods[%d].spec.nodeName: %q is not one of the case's nodes", field, c.Name, j, p.Spec.NodeName)
			}
		}
		for _, n := range append(append([]string(nil), c.Expect.Feasible...), c.Expect.Ranking...) {
			if !names[n] {
				return nil, fmt.Errorf("%s (%s).expect: node %q is not one of the case's nodes", field, c.Name, n)
			}
		}
		for n := range c.Expect.Rejected {
			if !names[n] {
				return nil, fmt.Errorf("%s (%s).expect.rejected: node %q is not one of the case's nodes", field, c.Name, n)
			}
		}
		if len(c.Args) == 0 {
			c.Args = f.Args
		}
		if len(bytes.TrimSpace(c.Args)) == 0 || string(bytes.TrimSpace(c.Args)) == "null" {
			c.Args = nil
		}
	}
	return &f, nil
}
