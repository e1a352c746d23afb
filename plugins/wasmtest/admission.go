package wasmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// decodeObject decodes a Kubernetes object of any built-in kind from its JSON.
func decodeObject(raw json.RawMessage) (runtime.Object, schema.GroupVersionKind, error) {
	obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, schema.GroupVersionKind{}, err
	}
	return obj, *gvk, nil
}

// attributes builds the admission request of a case.
func (r *AdmissionRequest) attributes() (*admission.Attributes, error) {
	a := &admission.Attributes{Operation: admission.Operation(strings.ToUpper(r.Operation)), Subresource: r.SubResource, DryRun: r.DryRun,
		User: admission.UserInfo{Name: "alice", Groups: []string{"system:authenticated"}}}
	if a.Operation == "" {
		a.Operation = admission.Create
	}
	switch a.Operation {
	case admission.Create, admission.Update, admission.Delete, admission.Connect:
	default:
		return nil, fmt.Errorf("request.operation: %q must be CREATE, UPDATE, DELETE or CONNECT", r.Operation)
	}
	if r.User != nil {
		a.User = admission.UserInfo{Name: r.User.Username, Groups: r.User.Groups}
	}
	var gvk schema.GroupVersionKind
	for _, o := range []struct {
		field string
		raw   json.RawMessage
		into  *runtime.Object
	}{{"request.object", r.Object, &a.Object}, {"request.oldObject", r.OldObject, &a.OldObject}} {
		if len(o.raw) == 0 {
			continue
		}
		obj, k, err := decodeObject(o.raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.field, err)
		}
		*o.into, gvk = obj, k
	}
	main := a.Object
	if main == nil {
		main = a.OldObject
	}
	m, err := meta.Accessor(main)
	if err != nil {
		return nil, fmt.Errorf("request.object: %w", err)
	}
	a.Kind = gvk
	a.Resource, _ = meta.UnsafeGuessKindToResource(gvk)
	a.Name, a.Namespace = m.GetName(), r.Namespace
	if a.Namespace == "" {
		a.Namespace = m.GetNamespace()
	}
	return a, nil
}

// objectReader serves a case's objects to get_object and list_objects.
type objectReader struct {
	byResource map[string][]runtime.Object
	kinds      map[string]schema.GroupVersionKind
}

func newObjectReader(raws []json.RawMessage) (*objectReader, []string, error) {
	r := &objectReader{byResource: map[string][]runtime.Object{}, kinds: map[string]schema.GroupVersionKind{}}
	var resources []string
	for i, raw := range raws {
		obj, gvk, err := decodeObject(raw)
		if err != nil {
			return nil, nil, fmt.Errorf("objects[%d]: %w", i, err)
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		if _, seen := r.kinds[gvr.Resource]; !seen {
			resources = append(resources, gvr.Resource)
		}
		r.kinds[gvr.Resource] = gvk
		r.byResource[gvr.Resource] = append(r.byResource[gvr.Resource], obj)
	}
	return r, resources, nil
}

// clusterScoped are the built-in cluster-scoped resources a policy is likely to read.
var clusterScoped = map[string]bool{"namespaces": true, "nodes": true, "persistentvolumes": true, "storageclasses": true,
	"clusterroles": true, "clusterrolebindings": true, "priorityclasses": true}

func (r *objectReader) Resource(res string) (schema.GroupVersionKind, bool, bool) {
	gvk, ok := r.kinds[res]
	return gvk, !clusterScoped[res], ok
}

func (r *objectReader) Get(_ context.Context, res, ns, name string) (runtime.Object, error) {
	for _, o := range r.byResource[res] {
		m, _ := meta.Accessor(o)
		if m.GetName() == name && (clusterScoped[res] || m.GetNamespace() == ns) {
			return o, nil
		}
	}
	return nil, fmt.Errorf("%s %s/%s: %w", res, ns, name, admission.ErrNotFound)
}

func (r *objectReader) List(_ context.Context, res, ns string) ([]runtime.Object, error) {
	var out []runtime.Object
	for _, o := range r.byResource[res] {
		if m, _ := meta.Accessor(o); clusterScoped[res] || m.GetNamespace() == ns {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := meta.Accessor(out[i])
		b, _ := meta.Accessor(out[j])
		return a.GetName() < b.GetName()
	})
	return out, nil
}

// runAdmission runs the module's Mutate (if any) then its Validate on the case's request,
// as the API server runs a policy that exports both.
func (p *Plugin) runAdmission(ctx context.Context, c *Case, pool *wasmhost.Pool) []string {
	if len(p.mod.Kinds().Intersect(admitwasm.Kinds)) == 0 {
		return []string{"the case is an admission request, and the module exports neither wasmkube_validate nor wasmkube_mutate"}
	}
	a, err := c.Request.attributes()
	if err != nil {
		return []string{"the case: " + err.Error()}
	}
	reader, resources, err := newObjectReader(c.Objects)
	if err != nil {
		return []string{"the case: " + err.Error()}
	}
	res, fail := p.admit(ctx, pool, a, reader, resources)
	if fail != nil {
		return fail
	}
	return compareAdmission(c.Expect, res)
}

// compareAdmission lists where what a case's request got (from a module or from CEL
// policies) differs from what the case expects.
func compareAdmission(want Expect, res *admitted) []string {
	allowed, message, warnings := res.allowed, res.message, res.warnings
	diff := res.capped
	if want.Allowed != nil && *want.Allowed != allowed {
		if allowed {
			diff = append(diff, "want the request denied, it was allowed")
		} else {
			diff = append(diff, fmt.Sprintf("want the request allowed, it was denied: %q", message))
		}
	}
	if want.Message != "" && !strings.Contains(message, want.Message) {
		diff = append(diff, fmt.Sprintf("want a denial message containing %q, got %q", want.Message, message))
	}
	for _, w := range want.Warnings {
		found := false
		for _, got := range warnings {
			found = found || strings.Contains(got, w)
		}
		if !found {
			diff = append(diff, fmt.Sprintf("want a warning containing %q, got %q", w, warnings))
		}
	}
	if want.Object != nil {
		got, err := json.Marshal(res.object)
		if err != nil {
			return append(diff, "the resulting object does not marshal: "+err.Error())
		}
		var wantV, gotV any
		if err := json.Unmarshal(*want.Object, &wantV); err != nil {
			return append(diff, "expect.object: "+err.Error())
		}
		_ = json.Unmarshal(got, &gotV)
		diff = append(diff, subsetDiff("object", wantV, gotV)...)
	}
	return diff
}

// warningsOverCap reports the warnings of a call that the host cut to the 1 KiB cap or
// dropped beyond the 16th: the client never sees what they said past the cap.
func warningsOverCap(kind string, c *admitwasm.Call) []string {
	var out []string
	for _, n := range c.OversizedWarnings {
		out = append(out, fmt.Sprintf("%s: a warning over the size cap: %d bytes, cut to 1 KiB (the client sees only its first 1024 bytes; keep a warning short)", kind, n))
	}
	if c.DroppedWarnings > 0 {
		out = append(out, fmt.Sprintf("%s: %d warning(s) over the cap of 16 per call were dropped", kind, c.DroppedWarnings))
	}
	return out
}

// admitted is what a policy's Mutate then Validate made of a request.
type admitted struct {
	allowed  bool
	message  string
	warnings []string
	// capped are the warnings over the size cap (warningsOverCap).
	capped []string
	// object is the object after the Mutate's patch (the request's own without one).
	object runtime.Object
}

// admit runs the module's Mutate (if any) then its Validate on a, as the API server runs
// a policy that exports both. A plugin failure is returned as its description.
func (p *Plugin) admit(ctx context.Context, pool *wasmhost.Pool, a *admission.Attributes, reader admission.ObjectReader, resources []string) (*admitted, []string) {
	res := &admitted{allowed: true, object: a.Object}
	cp := *a
	req := admitwasm.NewRequest(&cp)
	for _, k := range p.mod.Kinds().Intersect(admitwasm.Kinds) {
		call := &admitwasm.Call{Kind: k, Attributes: &cp, Reader: reader, Capabilities: resources}
		err := call.Do(ctx, pool, req)
		res.warnings = append(res.warnings, call.Warnings...)
		res.capped = append(res.capped, warningsOverCap(k.Name, call)...)
		if err != nil {
			var ce *wasmhost.CallError
			if errors.As(err, &ce) {
				return nil, []string{fmt.Sprintf("plugin failure in %s: %s: %v", ce.Kind, ce.Reason, ce.Err)}
			}
			return nil, []string{"plugin failure: " + err.Error()}
		}
		if call.Code == admitwasm.CodeDenied {
			res.allowed, res.message = false, call.Reason
			break
		}
		if call.Patched != nil {
			cp.Object = call.Patched
			res.object = call.Patched
			req = admitwasm.NewRequest(&cp)
		}
	}
	return res, nil
}

// subsetDiff lists where got lacks or differs from what want gives (maps: only want's
// keys; lists: same length, element by element).
func subsetDiff(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %s", path, short(got))}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			gv, present := g[k]
			if !present {
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, short(w[k])))
				continue
			}
			out = append(out, subsetDiff(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got))}
		}
		var out []string
		for i := range w {
			out = append(out, subsetDiff(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	}
	if !reflect.DeepEqual(want, got) {
		return []string{fmt.Sprintf("%s: want %s, got %s", path, short(want), short(got))}
	}
	return nil
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
