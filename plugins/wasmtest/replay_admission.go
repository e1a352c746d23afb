package wasmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/admission"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
)

// ReplayUser is the user every replayed request is made as: a recording sees what was
// stored, not who wrote it.
var ReplayUser = admission.UserInfo{Name: "wasmkube:replay", Groups: []string{"system:authenticated"}}

// AdmissionExample is one request the candidate answers differently.
type AdmissionExample struct {
	// Kind is refused, allowed (no longer refused: with a baseline), changed or warning.
	Kind string `json:"kind"`
	// Request is "OPERATION resource[/subresource] namespace/name".
	Request string `json:"request"`
	Policy  string `json:"policy"`
	// Message is the refusal or the warning.
	Message string `json:"message,omitempty"`
	// Fields are the changed fields, "path: old -> new".
	Fields []string `json:"fields,omitempty"`
}

// AdmissionReport says what a candidate admission config would have changed.
type AdmissionReport struct {
	// Reference is "recording" (every recorded request was admitted, as stored) or
	// "baseline" (the baseline config's answers on the same history).
	Reference string `json:"reference"`
	User      string `json:"user"`
	Requests  int    `json:"requests"`
	// Refused counts requests the candidate refuses (and the reference admitted).
	Refused         int            `json:"refused"`
	RefusedByPolicy map[string]int `json:"refusedByPolicy,omitempty"`
	// Allowed counts, with a baseline, requests the baseline refuses and the candidate admits.
	Allowed         int            `json:"allowed,omitempty"`
	AllowedByPolicy map[string]int `json:"allowedByPolicy,omitempty"`
	// Changed counts admitted requests whose stored object would differ from the
	// reference's; ChangedByPolicy the policies whose patch differs.
	Changed         int            `json:"changed"`
	ChangedByPolicy map[string]int `json:"changedByPolicy,omitempty"`
	// Warnings counts warnings the reference did not give, by policy.
	Warnings         int                `json:"warnings"`
	WarningsByPolicy map[string]int     `json:"warningsByPolicy,omitempty"`
	Examples         []AdmissionExample `json:"examples,omitempty"`
	Duration         time.Duration      `json:"durationNanos"`
}

// maxAdmissionExamples is how many examples of each kind and policy a report keeps.
const maxAdmissionExamples = 5

// AdmissionPolicies loads a whole config file's `admission:` section for a replay. A
// file without the section is an error naming it.
func AdmissionPolicies(ctx context.Context, opts admitwasm.Options, file string, data []byte) (*admitwasm.Policies, error) {
	var top map[string]json.RawMessage
	if js, err := yaml.YAMLToJSON(data); err == nil {
		_ = json.Unmarshal(js, &top)
	}
	if _, ok := top["admission"]; !ok {
		return nil, fmt.Errorf("%s: the recording has admission requests, and the config has no admission: section to replay them against", file)
	}
	opts.ConfigFile = file
	opts.Config = nil
	p, err := admitwasm.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// replayStore is the recorded objects at one point of the history: what get_object,
// list_objects and namespaceSelector read during a replayed request.
type replayStore struct {
	objs       map[string]map[string]runtime.Object // resource -> namespace/name
	kinds      map[string]schema.GroupVersionKind
	namespaced map[string]bool
}

func newReplayStore() *replayStore {
	s := &replayStore{objs: map[string]map[string]runtime.Object{}, kinds: map[string]schema.GroupVersionKind{}, namespaced: map[string]bool{}}
	// Built-in resources a policy may be granted without the recording holding any.
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		gvr, _ := meta.UnsafeGuessKindToResource(gvk)
		if old, ok := s.kinds[gvr.Resource]; ok && (old.Version == "v1" || gvk.Version != "v1") {
			continue
		}
		s.kinds[gvr.Resource] = gvk
		s.namespaced[gvr.Resource] = !clusterScoped[gvr.Resource]
	}
	return s
}

func (s *replayStore) put(res string, gvk schema.GroupVersionKind, ns, name string, obj runtime.Object) {
	if s.objs[res] == nil {
		s.objs[res] = map[string]runtime.Object{}
	}
	s.kinds[res] = gvk
	s.namespaced[res] = ns != ""
	s.objs[res][ns+"/"+name] = obj
}

func (s *replayStore) remove(res, ns, name string) { delete(s.objs[res], ns+"/"+name) }

func (s *replayStore) Resource(res string) (schema.GroupVersionKind, bool, bool) {
	gvk, ok := s.kinds[res]
	return gvk, s.namespaced[res], ok
}

func (s *replayStore) Get(_ context.Context, res, ns, name string) (runtime.Object, error) {
	if !s.namespaced[res] {
		ns = ""
	}
	if o, ok := s.objs[res][ns+"/"+name]; ok {
		return o, nil
	}
	return nil, fmt.Errorf("%s %s/%s: %w", res, ns, name, admission.ErrNotFound)
}

func (s *replayStore) List(_ context.Context, res, ns string) ([]runtime.Object, error) {
	var keys []string
	for k := range s.objs[res] {
		if !s.namespaced[res] || strings.HasPrefix(k, ns+"/") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	out := make([]runtime.Object, 0, len(keys))
	for _, k := range keys {
		out = append(out, s.objs[res][k])
	}
	return out, nil
}

// decodeAny decodes a recorded object: typed for built-in kinds, unstructured otherwise.
func decodeAny(raw json.RawMessage) (runtime.Object, error) {
	if obj, _, err := decodeObject(raw); err == nil {
		return obj, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// admissionOutcome is one config's answer to one request.
type admissionOutcome struct {
	refusedBy, message string
	changes            map[string][]string // policy -> changed fields
	warnings           []policyWarning
	final              []byte // the object the store would hold
}

type policyWarning struct{ policy, text string }

// namedMutation and namedValidation wrap one policy in the chain to see what it did.
type namedMutation struct {
	name string
	m    admission.MutationInterface
	out  *admissionOutcome
}

func (n namedMutation) Admit(ctx context.Context, a *admission.Attributes) error {
	before, _ := json.Marshal(a.Object)
	w := len(a.Warnings)
	err := n.m.Admit(ctx, a)
	n.out.noteWarnings(n.name, a.Warnings[w:])
	if err != nil {
		n.out.refusedBy, n.out.message = n.name, err.Error()
		return err
	}
	if a.Object != nil {
		if after, _ := json.Marshal(a.Object); !bytes.Equal(before, after) {
			n.out.changes[n.name] = append(n.out.changes[n.name], jsonFieldDiff(before, after)...)
		}
	}
	return nil
}

type namedValidation struct {
	name string
	v    admission.ValidationInterface
	out  *admissionOutcome
}

func (n namedValidation) Validate(ctx context.Context, a *admission.Attributes) error {
	w := len(a.Warnings)
	err := n.v.Validate(ctx, a)
	n.out.noteWarnings(n.name, a.Warnings[w:])
	if err != nil {
		n.out.refusedBy, n.out.message = n.name, err.Error()
	}
	return err
}

func (o *admissionOutcome) noteWarnings(policy string, ws []string) {
	for _, w := range ws {
		o.warnings = append(o.warnings, policyWarning{policy, w})
	}
}

func pluginName(p any) string {
	if n, ok := p.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", p)
}

// answer runs one request through the policies in the API server's order: every
// mutating policy, then every validating one; the first refusal ends it.
func answer(ctx context.Context, p AdmissionSet, rec *AdmissionRecord, obj, old runtime.Object) (*admissionOutcome, error) {
	out := &admissionOutcome{changes: map[string][]string{}}
	ms, vs := p.Plugins()
	var steps []admission.Plugin
	for _, m := range ms {
		steps = append(steps, namedMutation{pluginName(m), m, out})
	}
	for _, v := range vs {
		steps = append(steps, namedValidation{pluginName(v), v, out})
	}
	chain, err := admission.NewChain(steps...)
	if err != nil {
		return nil, err
	}
	gv, _ := schema.ParseGroupVersion(rec.APIVersion)
	a := &admission.Attributes{Operation: admission.Operation(rec.Operation), Kind: gv.WithKind(rec.Kind),
		Resource: gv.WithResource(rec.Resource), Subresource: rec.Subresource, Namespace: rec.Namespace, Name: rec.Name,
		Object: obj, OldObject: old, User: ReplayUser}
	if err := chain.Admit(ctx, a); err != nil && out.refusedBy == "" {
		out.refusedBy, out.message = "(chain)", err.Error()
	}
	if a.Object != nil {
		out.final, _ = json.Marshal(a.Object)
	}
	return out, nil
}

// ReplayAdmission rebuilds the recorded objects and, for each recorded request, asks the
// candidate policies (and the baseline's, when given) what they would answer against the
// objects as they were just before it. The history moves on with what was really stored.
func ReplayAdmission(ctx context.Context, recs []Record, candidate, baseline AdmissionSet) (*AdmissionReport, error) {
	start := time.Now()
	store := newReplayStore()
	for _, p := range []AdmissionSet{candidate, baseline} {
		if p != nil {
			if err := p.SetObjectReader(store); err != nil {
				return nil, err
			}
		}
	}
	rep := &AdmissionReport{Reference: "recording", User: ReplayUser.Name, RefusedByPolicy: map[string]int{},
		AllowedByPolicy: map[string]int{}, ChangedByPolicy: map[string]int{}, WarningsByPolicy: map[string]int{}}
	if baseline != nil {
		rep.Reference = "baseline"
	}
	examples := map[string]int{}
	note := func(ex AdmissionExample) {
		k := ex.Kind + "\x00" + ex.Policy
		if examples[k] < maxAdmissionExamples {
			examples[k]++
			rep.Examples = append(rep.Examples, ex)
		}
	}
	for i, rec := range recs {
		if o := rec.Object; o != nil {
			gv, _ := schema.ParseGroupVersion(o.APIVersion)
			if o.Deleted {
				store.remove(o.Resource, o.Namespace, o.Name)
				continue
			}
			obj, err := decodeAny(o.Object)
			if err != nil {
				return nil, fmt.Errorf("record %d: object %s %s/%s: %w", i+1, o.Resource, o.Namespace, o.Name, err)
			}
			store.put(o.Resource, gv.WithKind(o.Kind), o.Namespace, o.Name, obj)
			continue
		}
		r := rec.Admission
		if r == nil {
			continue
		}
		what := fmt.Sprintf("%s %s", r.Operation, r.Resource)
		if r.Subresource != "" {
			what += "/" + r.Subresource
		}
		if r.Namespace != "" {
			what += " " + r.Namespace + "/" + r.Name
		} else {
			what += " " + r.Name
		}
		var obj, old runtime.Object
		var err error
		if len(r.Object) > 0 {
			if obj, err = decodeAny(r.Object); err != nil {
				return nil, fmt.Errorf("record %d: admission %s: object: %w", i+1, what, err)
			}
		}
		if len(r.OldObject) > 0 {
			if old, err = decodeAny(r.OldObject); err != nil {
				return nil, fmt.Errorf("record %d: admission %s: oldObject: %w", i+1, what, err)
			}
		}
		run := func(p AdmissionSet) (*admissionOutcome, error) {
			var o, ol runtime.Object
			if obj != nil {
				o = obj.DeepCopyObject()
			}
			if old != nil {
				ol = old.DeepCopyObject()
			}
			return answer(ctx, p, r, o, ol)
		}
		cand, err := run(candidate)
		if err != nil {
			return nil, fmt.Errorf("record %d: admission %s: %w", i+1, what, err)
		}
		// The reference: the recording (admitted, stored as recorded, no warnings known)
		// or the baseline's answer.
		ref := &admissionOutcome{changes: map[string][]string{}}
		if obj != nil {
			ref.final, _ = json.Marshal(obj)
		}
		if baseline != nil {
			if ref, err = run(baseline); err != nil {
				return nil, fmt.Errorf("record %d: admission %s: baseline: %w", i+1, what, err)
			}
		}
		rep.Requests++
		switch {
		case cand.refusedBy != "" && ref.refusedBy == "":
			rep.Refused++
			rep.RefusedByPolicy[cand.refusedBy]++
			note(AdmissionExample{Kind: "refused", Request: what, Policy: cand.refusedBy, Message: cand.message})
		case cand.refusedBy == "" && ref.refusedBy != "":
			rep.Allowed++
			rep.AllowedByPolicy[ref.refusedBy]++
			note(AdmissionExample{Kind: "allowed", Request: what, Policy: ref.refusedBy, Message: ref.message})
		case cand.refusedBy == "":
			if !bytes.Equal(cand.final, ref.final) {
				rep.Changed++
			}
			names := map[string]bool{}
			for n := range cand.changes {
				names[n] = true
			}
			for n := range ref.changes {
				names[n] = true
			}
			sorted := make([]string, 0, len(names))
			for n := range names {
				sorted = append(sorted, n)
			}
			sort.Strings(sorted)
			for _, n := range sorted {
				if reflect.DeepEqual(cand.changes[n], ref.changes[n]) {
					continue
				}
				rep.ChangedByPolicy[n]++
				fields := cand.changes[n]
				if fields == nil {
					fields = []string{"(the baseline's change is no longer made: " + strings.Join(ref.changes[n], "; ") + ")"}
				}
				note(AdmissionExample{Kind: "changed", Request: what, Policy: n, Fields: fields})
			}
		}
		known := map[policyWarning]bool{}
		for _, w := range ref.warnings {
			known[w] = true
		}
		for _, w := range cand.warnings {
			if known[w] {
				continue
			}
			rep.Warnings++
			rep.WarningsByPolicy[w.policy]++
			note(AdmissionExample{Kind: "warning", Request: what, Policy: w.policy, Message: w.text})
		}
		// The history moves on with what was stored.
		gv, _ := schema.ParseGroupVersion(r.APIVersion)
		switch {
		case r.Operation == "DELETE":
			store.remove(r.Resource, r.Namespace, r.Name)
		case obj != nil:
			store.put(r.Resource, gv.WithKind(r.Kind), r.Namespace, r.Name, obj)
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

// jsonFieldDiff lists the fields that differ between two objects' JSON, "path: old -> new".
func jsonFieldDiff(before, after []byte) []string {
	var a, b any
	_ = json.Unmarshal(before, &a)
	_ = json.Unmarshal(after, &b)
	var out []string
	fieldDiff("", a, b, &out)
	return out
}

func fieldDiff(path string, a, b any, out *[]string) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			av, ina := am[k]
			bv, inb := bm[k]
			switch {
			case !ina:
				*out = append(*out, fmt.Sprintf("%s: (absent) -> %s", p, short(bv)))
			case !inb:
				*out = append(*out, fmt.Sprintf("%s: %s -> (absent)", p, short(av)))
			default:
				fieldDiff(p, av, bv, out)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			fieldDiff(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i], out)
		}
		return
	}
	*out = append(*out, fmt.Sprintf("%s: %s -> %s", path, short(a), short(b)))
}

// WriteAdmissionReplay prints an admission report as text.
func WriteAdmissionReplay(w io.Writer, rep *AdmissionReport) {
	fmt.Fprintf(w, "replayed %d admission requests in %s against the %s (as user %s)\n", rep.Requests,
		rep.Duration.Round(time.Millisecond), rep.Reference, rep.User)
	byPolicy := func(label string, n int, m map[string]int) {
		fmt.Fprintf(w, "  %-24s %d\n", label, n)
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(w, "    %-22s %d\n", k, m[k])
		}
	}
	byPolicy("would be refused:", rep.Refused, rep.RefusedByPolicy)
	if rep.Reference == "baseline" {
		byPolicy("no longer refused:", rep.Allowed, rep.AllowedByPolicy)
	}
	byPolicy("would be changed:", rep.Changed, rep.ChangedByPolicy)
	byPolicy("new warnings:", rep.Warnings, rep.WarningsByPolicy)
	for _, ex := range rep.Examples {
		switch ex.Kind {
		case "refused":
			fmt.Fprintf(w, "  refused %s by %s: %s\n", ex.Request, ex.Policy, ex.Message)
		case "allowed":
			fmt.Fprintf(w, "  no longer refused %s (the baseline's %s: %s)\n", ex.Request, ex.Policy, ex.Message)
		case "changed":
			fmt.Fprintf(w, "  changed %s by %s:\n", ex.Request, ex.Policy)
			for _, f := range ex.Fields {
				fmt.Fprintf(w, "      %s\n", f)
			}
		case "warning":
			fmt.Fprintf(w, "  warning %s from %s: %s\n", ex.Request, ex.Policy, ex.Message)
		}
	}
}
