package wasmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// admissionChecks are the checks that only admission policies have: the API server may
// call a mutating policy again on its own output (reinvocation, as upstream does for
// webhooks with reinvocationPolicy IfNeeded), and clients send back objects that already
// carry a mutation (kubectl apply of what get returned), so a Mutate must be idempotent;
// and a Validate's verdict must be a function of the request alone.
func (p *Plugin) admissionChecks(ctx context.Context, o ConformanceOptions) []Result {
	var out []Result
	run := func(name string, f func() []string) {
		start := time.Now()
		diff := f()
		out = append(out, Result{Name: "admission: " + name, Passed: len(diff) == 0, Diff: diff, Duration: time.Since(start)})
	}
	kinds := p.mod.Kinds()
	if kinds.Has(admitwasm.Mutate) {
		run("a mutate re-invoked on its own output changes nothing", func() []string { return p.checkReinvocation(ctx, o) })
		run("a mutate leaves an object that already carries its patch unchanged", func() []string { return p.checkAlreadyPatched(ctx, o) })
	}
	if kinds.Has(admitwasm.Validate) {
		run("a validate's verdict does not depend on call count or earlier requests", func() []string { return p.checkVerdictStable(ctx, o) })
	}
	return out
}

// mutate makes one Mutate call on pool and returns the object after it (obj itself when
// the call set no patch).
func mutate(ctx context.Context, pool *wasmhost.Pool, a *admission.Attributes) (runtime.Object, *admitwasm.Call, error) {
	c := &admitwasm.Call{Kind: admitwasm.Mutate, Attributes: a}
	if err := c.Do(ctx, pool, nil); err != nil {
		return nil, c, err
	}
	if c.Patched == nil {
		return a.Object, c, nil
	}
	return c.Patched, c, nil
}

func withObject(a *admission.Attributes, obj runtime.Object) *admission.Attributes {
	cp := *a
	cp.Object = obj.DeepCopyObject()
	return &cp
}

func (p *Plugin) checkReinvocation(ctx context.Context, o ConformanceOptions) []string {
	var diff []string
	for _, a := range admissionFixtures() {
		if a.Object == nil {
			continue
		}
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		first, c, err := mutate(ctx, pool, withObject(a, a.Object))
		if err == nil && c.Code == wasmhost.CodeSuccess {
			var second runtime.Object
			second, c, err = mutate(ctx, pool, withObject(a, first))
			if err == nil && c.Code == wasmhost.CodeSuccess {
				if ch := changes(first, second); len(ch) > 0 {
					diff = append(diff, fmt.Sprintf("%s %s/%s: the second call on the first call's output changed %s (the API server re-invokes a mutate after later mutations: patch only what is not yet as wanted)",
						a.Operation, a.Kind.Kind, a.Name, strings.Join(ch, ", ")))
				}
			} else if err == nil {
				diff = append(diff, fmt.Sprintf("%s %s/%s: the first call allowed it, the second call on its own output denied it: %q", a.Operation, a.Kind.Kind, a.Name, c.Reason))
			}
		}
		pool.Close()
		if err != nil {
			diff = append(diff, failure(fmt.Sprintf("%s %s/%s", a.Operation, a.Kind.Kind, a.Name), err)...)
		}
	}
	return diff
}

func (p *Plugin) checkAlreadyPatched(ctx context.Context, o ConformanceOptions) []string {
	var diff []string
	for _, a := range admissionFixtures() {
		if a.Object == nil {
			continue
		}
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		patched, c, err := mutate(ctx, pool, withObject(a, a.Object))
		pool.Close()
		if err != nil {
			return failure(fmt.Sprintf("%s %s/%s", a.Operation, a.Kind.Kind, a.Name), err)
		}
		if c.Code != wasmhost.CodeSuccess || c.Patched == nil {
			continue
		}
		// The patched object comes back as a new request on a fresh instance: created
		// again (a copy of a mutated manifest), and updated with itself as the stored object
		// (kubectl apply of what the API returned).
		create := withObject(a, patched)
		create.Operation, create.OldObject = admission.Create, nil
		update := withObject(a, patched)
		update.Operation, update.OldObject = admission.Update, patched.DeepCopyObject()
		for _, b := range []*admission.Attributes{create, update} {
			pool, d := p.pool(ctx, o.Args, 1)
			if d != nil {
				return d
			}
			again, c, err := mutate(ctx, pool, b)
			pool.Close()
			if err != nil {
				return failure(fmt.Sprintf("%s %s/%s carrying its own patch", b.Operation, a.Kind.Kind, a.Name), err)
			}
			if c.Code != wasmhost.CodeSuccess {
				diff = append(diff, fmt.Sprintf("%s %s/%s carrying the policy's own patch: denied: %q", b.Operation, a.Kind.Kind, a.Name, c.Reason))
				continue
			}
			if ch := changes(patched, again); len(ch) > 0 {
				diff = append(diff, fmt.Sprintf("%s %s/%s carrying the policy's own patch: the mutate changed %s again (check whether the object is already as wanted before patching)",
					b.Operation, a.Kind.Kind, a.Name, strings.Join(ch, ", ")))
			}
		}
	}
	return diff
}

// verdict is what a Validate answered, comparable.
func verdict(c *admitwasm.Call) string {
	if c.Code == wasmhost.CodeSuccess {
		return "allowed"
	}
	return fmt.Sprintf("denied (code %d): %q", c.Code, c.Reason)
}

func (p *Plugin) checkVerdictStable(ctx context.Context, o ConformanceOptions) []string {
	fixtures := admissionFixtures()
	validate := func(pool *wasmhost.Pool, a *admission.Attributes) (string, error) {
		c := &admitwasm.Call{Kind: admitwasm.Validate, Attributes: a}
		if err := c.Do(ctx, pool, nil); err != nil {
			return "", err
		}
		return verdict(c), nil
	}
	name := func(a *admission.Attributes) string { return fmt.Sprintf("%s %s/%s", a.Operation, a.Kind.Kind, a.Name) }
	// The same request three times on one instance: a count, a rate limit or a cache
	// of names seen shows as a verdict that changes.
	fresh := make([]string, len(fixtures))
	for i, a := range fixtures {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		var got []string
		for range 3 {
			v, err := validate(pool, a)
			if err != nil {
				pool.Close()
				return failure(name(a), err)
			}
			got = append(got, v)
		}
		pool.Close()
		fresh[i] = got[0]
		for n, v := range got[1:] {
			if v != got[0] {
				return []string{fmt.Sprintf("%s: call 1 %s, call %d of the same request on the same instance %s: the verdict depends on how often the policy was called (keep no count or cache in globals)",
					name(a), got[0], n+2, v)}
			}
		}
	}
	// Each request after every other one on one instance: state kept across requests.
	for i, a := range fixtures {
		pool, d := p.pool(ctx, o.Args, 1)
		if d != nil {
			return d
		}
		for j, b := range fixtures {
			if j == i {
				continue
			}
			if _, err := validate(pool, b); err != nil {
				pool.Close()
				return failure(name(b), err)
			}
		}
		v, err := validate(pool, a)
		pool.Close()
		if err != nil {
			return failure(name(a), err)
		}
		if v != fresh[i] {
			return []string{fmt.Sprintf("%s: %s on a fresh instance, %s after the %d other fixture requests on the same instance: the verdict depends on requests seen before (keep nothing from a request in globals)",
				name(a), fresh[i], v, len(fixtures)-1)}
		}
	}
	return nil
}

// changes lists where b differs from a, as JSON Pointer paths (the paths of a JSON
// Patch): "/spec/containers/1 added", "/metadata/labels/x changed from "a" to "b"".
func changes(a, b runtime.Object) []string {
	var av, bv any
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	_ = json.Unmarshal(ja, &av)
	_ = json.Unmarshal(jb, &bv)
	var out []string
	jsonChanges("", av, bv, &out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out
}

func jsonChanges(path string, a, b any, out *[]string) {
	if reflect.DeepEqual(a, b) {
		return
	}
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inA:
				*out = append(*out, fmt.Sprintf("%s (added %s)", p, short(y)))
			case !inB:
				*out = append(*out, fmt.Sprintf("%s (removed)", p))
			default:
				jsonChanges(p, x, y, out)
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := range max(len(av), len(bv)) {
			p := fmt.Sprintf("%s/%d", path, i)
			switch {
			case i >= len(av):
				*out = append(*out, fmt.Sprintf("%s (added %s)", p, short(bv[i])))
			case i >= len(bv):
				*out = append(*out, fmt.Sprintf("%s (removed)", p))
			default:
				jsonChanges(p, av[i], bv[i], out)
			}
		}
		return
	}
	if path == "" {
		path = "/"
	}
	*out = append(*out, fmt.Sprintf("%s (from %s to %s)", path, short(a), short(b)))
}
