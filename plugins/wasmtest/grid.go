package wasmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/schedwasm"
)

// Grid is a tests.yaml: admission policies and scheduler plugins crossed with resources,
// and the result each pair must give, in the shape of kyverno test's kyverno-test.yaml
// (docs/plugin-kit.md). A scheduler plugin's rows are placements: asserted against a live
// cluster only (RunGridInCluster); in process they are reported as skipped.
type Grid struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Metadata   struct {
		Name string `json:"name,omitempty"`
	} `json:"metadata,omitempty"`
	// Policies are the modules under test: a path, or an object with args and matching.
	Policies []GridPolicy `json:"policies"`
	// Resources are files of Kubernetes objects (several per file, split by ---).
	Resources []string `json:"resources"`
	// Results say what each policy must make of each resource.
	Results []GridResult `json:"results"`

	dir     string
	objects []gridObject
}

// GridPolicy is one policy of a grid.
type GridPolicy struct {
	// Name is how results name it (default: the file name without .wasm).
	Name string `json:"name,omitempty"`
	// Path is the module, relative to the tests.yaml (empty: the module given on the
	// command line).
	Path string          `json:"path,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Kinds and Operations are the requests the policy is configured for, as in its
	// admission config's match (empty: all); the others are skipped, never called.
	Kinds      []string `json:"kinds,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// UnmarshalJSON takes a policy given as a bare path, as kyverno-test.yaml lists them.
func (p *GridPolicy) UnmarshalJSON(b []byte) error {
	var path string
	if json.Unmarshal(b, &path) == nil {
		*p = GridPolicy{Path: path}
		return nil
	}
	type plain GridPolicy
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode((*plain)(p))
}

// GridResult is what one policy must make of some resources.
type GridResult struct {
	Policy string `json:"policy"`
	// Resources are names, or namespace/name; Kind narrows them when names repeat.
	Resources []string `json:"resources"`
	Kind      string   `json:"kind,omitempty"`
	// Operation is the request made with each resource: CREATE (default) or UPDATE (the
	// resource as both the object and the stored object).
	Operation string `json:"operation,omitempty"`
	// Result is pass (allowed, no warning), fail (denied), warn (allowed with a warning)
	// or skip (the policy is not configured for the request).
	Result string `json:"result"`
	// Message is a substring of the denial (fail) or of a warning (warn).
	Message string `json:"message,omitempty"`
	// PatchedResource is a file with the object as a Mutate must leave it (compared
	// whole).
	PatchedResource string `json:"patchedResource,omitempty"`
	// Nodes are where a pod may land, for a scheduler plugin's row with result pass (fail:
	// the pod stays unschedulable); empty: any node. Placements are asserted with --cluster.
	Nodes []string `json:"nodes,omitempty"`
}

type gridObject struct {
	kind, namespace, name string
	raw                   json.RawMessage
	obj                   runtime.Object
}

// IsGrid says whether a YAML document is a tests.yaml grid (it has results), not a case file.
func IsGrid(b []byte) bool {
	var top map[string]any
	return yaml.Unmarshal(b, &top) == nil && top["results"] != nil
}

// LoadGrid reads a tests.yaml and the resource files it names, refusing unknown fields and
// results that name a policy or resource the grid does not have.
func LoadGrid(path string) (*Grid, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	var g Grid
	if err := yaml.UnmarshalStrict(b, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	g.dir = filepath.Dir(path)
	if len(g.Policies) == 0 {
		return nil, fmt.Errorf("%s: policies: at least one policy is required", name)
	}
	policies := map[string]bool{}
	for i := range g.Policies {
		p := &g.Policies[i]
		if p.Name == "" {
			p.Name = strings.TrimSuffix(filepath.Base(p.Path), ".wasm")
		}
		if p.Name == "" || p.Name == "." {
			return nil, fmt.Errorf("%s: policies[%d].name: required when path is empty", name, i)
		}
		if policies[p.Name] {
			return nil, fmt.Errorf("%s: policies[%d].name: %q is used by an earlier policy", name, i, p.Name)
		}
		policies[p.Name] = true
		for j, op := range p.Operations {
			if !validOperation(op) {
				return nil, fmt.Errorf("%s: policies[%d].operations[%d]: %q must be CREATE, UPDATE, DELETE or CONNECT", name, i, j, op)
			}
		}
	}
	for i, f := range g.Resources {
		objs, err := readObjects(g.path(f))
		if err != nil {
			return nil, fmt.Errorf("%s: resources[%d]: %w", name, i, err)
		}
		g.objects = append(g.objects, objs...)
	}
	if len(g.Results) == 0 {
		return nil, fmt.Errorf("%s: results: at least one result is required", name)
	}
	for i, r := range g.Results {
		field := fmt.Sprintf("%s: results[%d]", name, i)
		switch {
		case !policies[r.Policy]:
			return nil, fmt.Errorf("%s.policy: %q is not one of the grid's policies", field, r.Policy)
		case !slices.Contains([]string{"pass", "fail", "warn", "skip"}, r.Result):
			return nil, fmt.Errorf("%s.result: %q must be pass, fail, warn or skip", field, r.Result)
		case len(r.Resources) == 0:
			return nil, fmt.Errorf("%s.resources: at least one resource is required", field)
		case r.Operation != "" && r.Operation != "CREATE" && r.Operation != "UPDATE":
			return nil, fmt.Errorf("%s.operation: %q must be CREATE or UPDATE", field, r.Operation)
		case len(r.Nodes) > 0 && r.Result != "pass":
			return nil, fmt.Errorf("%s.nodes: a placement is given with result pass (fail: the pod stays unschedulable), not %s", field, r.Result)
		}
		for j, ref := range r.Resources {
			if _, err := g.find(ref, r.Kind); err != nil {
				return nil, fmt.Errorf("%s.resources[%d]: %w", field, j, err)
			}
		}
		if r.PatchedResource != "" {
			objs, err := readObjects(g.path(r.PatchedResource))
			if err != nil || len(objs) != 1 {
				return nil, fmt.Errorf("%s.patchedResource: %s: want one object (%v)", field, r.PatchedResource, err)
			}
		}
	}
	return &g, nil
}

// path resolves a file the grid names: relative to the tests.yaml's directory.
func (g *Grid) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(g.dir, p)
}

func validOperation(op string) bool {
	return slices.Contains([]string{"CREATE", "UPDATE", "DELETE", "CONNECT"}, op)
}

// readObjects reads every object of a YAML or JSON file.
func readObjects(path string) ([]gridObject, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []gridObject
	for i := 0; ; i++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue
		}
		obj, gvk, err := decodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		out = append(out, gridObject{kind: gvk.Kind, namespace: m.GetNamespace(), name: m.GetName(), raw: raw, obj: obj})
	}
}

// find resolves a result's resource reference: name or namespace/name, of kind when given.
func (g *Grid) find(ref, kind string) (*gridObject, error) {
	ns, name, scoped := strings.Cut(ref, "/")
	if !scoped {
		name, ns = ns, ""
	}
	var found []*gridObject
	for i := range g.objects {
		o := &g.objects[i]
		if o.name == name && (!scoped || o.namespace == ns) && (kind == "" || o.kind == kind) {
			found = append(found, o)
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%q: no such resource in the grid's resources files", ref)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%q: %d resources have that name: give namespace/name or kind", ref, len(found))
}

// RunGrid runs every result of the grid: each policy on each of its resources, each pair
// on a fresh instance. module is the module of a policy without a path; o the kit's limits.
func RunGrid(ctx context.Context, g *Grid, module string, o Options) ([]Result, error) {
	plugins := map[string]*Plugin{}
	defer func() {
		for _, p := range plugins {
			p.Close(ctx)
		}
	}()
	policies := map[string]*GridPolicy{}
	for i := range g.Policies {
		gp := &g.Policies[i]
		policies[gp.Name] = gp
		path := module
		if gp.Path != "" {
			path = g.path(gp.Path)
		}
		if path == "" {
			return nil, fmt.Errorf("policies[%d] (%s): no path, and no module given on the command line", i, gp.Name)
		}
		p, err := Open(ctx, path, o)
		if err != nil {
			return nil, fmt.Errorf("policies[%d] (%s): %w", i, gp.Name, err)
		}
		plugins[gp.Name] = p
		if _, err := policyKindOf(p, path); err != nil {
			return nil, fmt.Errorf("policies[%d] (%s): %w", i, gp.Name, err)
		}
	}
	var out []Result
	for _, r := range g.Results {
		for _, ref := range r.Resources {
			obj, _ := g.find(ref, r.Kind)
			name := fmt.Sprintf("%s / %s %s: %s", r.Policy, obj.kind, ref, r.Result)
			if k, _ := policyKindOf(plugins[r.Policy], ""); k == placementPolicy {
				out = append(out, Result{Name: name, Skipped: true, Diff: []string{"a placement: asserted against a live cluster (plugin test --cluster)"}})
				continue
			}
			start := time.Now()
			diff := g.runPair(ctx, plugins[r.Policy], policies[r.Policy], &r, obj)
			out = append(out, gridRow(name, &r, diff, time.Since(start)))
		}
	}
	return out, nil
}

// gridRow is a row's result: a skip row that held (the policy was not called) is reported
// as skipped, as kyverno test counts it, not as passed.
func gridRow(name string, r *GridResult, diff []string, d time.Duration) Result {
	res := Result{Name: name, Passed: len(diff) == 0, Diff: diff, Duration: d}
	if res.Passed && r.Result == "skip" {
		res.Passed, res.Skipped = false, true
		res.Diff = []string{"the policy is not configured for this request"}
	}
	return res
}

// policyKind is what a grid's policy is: an admission policy (its rows are requests) or a
// scheduler plugin (its rows are placements).
type policyKind int

const (
	admissionPolicy policyKind = iota
	placementPolicy
)

// policyKindOf says what p is by its exports: admission when it exports validate or
// mutate, a placement when it exports scheduler entry points only.
func policyKindOf(p *Plugin, path string) (policyKind, error) {
	kinds := p.mod.Kinds()
	switch {
	case len(kinds.Intersect(admitwasm.Kinds)) > 0:
		return admissionPolicy, nil
	case len(kinds.Intersect(schedwasm.Kinds)) > 0:
		return placementPolicy, nil
	}
	return 0, fmt.Errorf("%s exports neither an admission entry point (wasmkube_validate, wasmkube_mutate) nor a scheduler one (a grid checks admission policies and placements)", path)
}

func (g *Grid) runPair(ctx context.Context, p *Plugin, gp *GridPolicy, r *GridResult, obj *gridObject) []string {
	op := r.Operation
	if op == "" {
		op = "CREATE"
	}
	req := &AdmissionRequest{Operation: op, Object: obj.raw}
	if op == "UPDATE" {
		req.OldObject = obj.raw
	}
	a, err := req.attributes()
	if err != nil {
		return []string{"resource " + obj.name + ": " + err.Error()}
	}
	got, message := "skip", ""
	var patched runtime.Object
	if (len(gp.Kinds) == 0 || slices.Contains(gp.Kinds, obj.kind)) && (len(gp.Operations) == 0 || slices.Contains(gp.Operations, op)) {
		pool, err := p.mod.NewPool(ctx, gp.Args, 1)
		if err != nil {
			return []string{"the policy did not load with its args: " + err.Error()}
		}
		res, fail := p.admit(ctx, pool, a, nil, nil)
		pool.Close()
		if fail != nil {
			return fail
		}
		if len(res.capped) > 0 {
			return res.capped
		}
		switch {
		case !res.allowed:
			got, message = "fail", res.message
		case len(res.warnings) > 0:
			got, message = "warn", strings.Join(res.warnings, "; ")
		default:
			got = "pass"
		}
		patched = res.object
	}
	var diff []string
	if got != r.Result {
		d := fmt.Sprintf("want %s, got %s", r.Result, got)
		if message != "" {
			d += fmt.Sprintf(": %q", message)
		}
		diff = append(diff, d)
	} else if r.Message != "" && !strings.Contains(message, r.Message) {
		diff = append(diff, fmt.Sprintf("want a message containing %q, got %q", r.Message, message))
	}
	if r.PatchedResource != "" {
		want, _ := readObjects(g.path(r.PatchedResource))
		if patched == nil {
			diff = append(diff, "patchedResource: the policy was not called (skip), so nothing was patched")
		} else if ch := changes(want[0].obj, patched); len(ch) > 0 {
			diff = append(diff, fmt.Sprintf("patchedResource %s: the mutated object differs at %s", r.PatchedResource, strings.Join(ch, ", ")))
		}
	}
	return diff
}
