package admitwasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	validationfield "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	policyvalidation "github.com/wasmkube/wasmkube/core/apis/policy/validation"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// Config is the `admission:` section of the wasmkube config file (docs/config.md).
type Config struct {
	// Policies run in this order within their phase (mutating, then validating).
	Policies []PolicySpec `json:"policies,omitempty"`
}

// PolicySpec declares one wasm admission policy.
//
// Its module keys are the spec every policy kind shares (modulespec.Spec): FailurePolicy
// is Fail (default: a failed call refuses the request with 500) or Ignore (the policy is
// skipped); Timeout of one call (default 10s, at most 30s), MemoryLimit of one instance
// (default 64Mi), Pool the number of instances, so of parallel calls (default
// DefaultPoolSize).
type PolicySpec struct {
	modulespec.Spec `json:",inline"`
	// Args are handed to the guest as JSON (`args` host function, wasmkube_init).
	Args json.RawMessage `json:"args,omitempty"`
	// Rules say which requests the policy sees; it sees nothing it does not name.
	Rules []Rule `json:"rules"`
	// NamespaceSelector and ObjectSelector narrow the match, as a webhook's do.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	ObjectSelector    *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// ValidationActions say what a denial does: Deny (default), Warn, Audit, as
	// ValidatingAdmissionPolicy's (Deny and Warn exclude each other).
	ValidationActions []string `json:"validationActions,omitempty"`
	// Capabilities are the resources the policy may read with get_object/list_objects.
	Capabilities []string `json:"capabilities,omitempty"`
	// MatchConditions are CEL expressions, as a ValidatingAdmissionPolicy's (upstream's
	// matchconditions package evaluates them): the policy sees a request its rules and
	// selectors match only when every one is true; one that fails to evaluate follows
	// FailurePolicy (Fail refuses the request, Ignore skips the policy).
	MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions,omitempty"`
}

// Rule matches requests by API group, version, resource and operation, as a webhook's
// rules do. "*" matches anything; resources are plurals with an optional subresource
// ("pods/status"); "pods" matches no subresource, "pods/*" every subresource of pods,
// "*" every resource and "*/*" every resource and subresource.
type Rule struct {
	APIGroups   []string `json:"apiGroups"`
	APIVersions []string `json:"apiVersions"`
	Resources   []string `json:"resources"`
	Operations  []string `json:"operations"`
}

// Failure policies and validation actions.
const (
	Fail   = "Fail"
	Ignore = "Ignore"
	Deny   = "Deny"
	Warn   = "Warn"
	Audit  = "Audit"
)

// DefaultPoolSize is a policy's number of instances when its config sets none.
const DefaultPoolSize = 4

// ConfigError is a configuration error; Field is the path of the offending key
// ("admission.policies[0].rules[0].operations").
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return "admission config: " + e.Msg
	}
	return "admission config: " + e.Field + ": " + e.Msg
}

// ParseConfig reads the `admission:` section of a whole wasmkube config file (YAML or
// JSON); other sections belong to other components. A file without the section has no
// policies. Decoding is strict: an unknown key is an error naming its path.
func ParseConfig(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &ConfigError{Msg: "invalid YAML: " + err.Error()}
	}
	var top map[string]json.RawMessage
	if t := bytes.TrimSpace(js); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(js, &top); err != nil {
			return nil, &ConfigError{Msg: "the file must be a mapping of sections: " + err.Error()}
		}
	}
	return ParseSection(top["admission"])
}

// ParseSection decodes the JSON of the `admission:` section alone (nil: no policies),
// defaults and validates it.
func ParseSection(section json.RawMessage) (*Config, error) {
	cfg := &Config{}
	if len(section) > 0 && string(section) != "null" {
		var generic any
		if err := json.Unmarshal(section, &generic); err != nil {
			return nil, &ConfigError{Field: "admission", Msg: err.Error()}
		}
		if err := unknownFields(generic, reflect.TypeOf(cfg).Elem(), "admission"); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(section, cfg); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, &ConfigError{Field: "admission." + modulespec.FieldPath(te.Field), Msg: fmt.Sprintf("cannot use %s as %s", te.Value, te.Type)}
			}
			return nil, &ConfigError{Field: "admission", Msg: err.Error()}
		}
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

var (
	rawMessage  = reflect.TypeOf(json.RawMessage{})
	unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// unknownFields walks decoded JSON against the Go type it decodes into and reports the
// first key the type does not have, or value it cannot hold, with its path.
// (encoding/json's DisallowUnknownFields and type errors do not say where in a list.)
func unknownFields(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	if v == nil {
		return nil
	}
	if msg := shapeError(v, t); msg != "" {
		return &ConfigError{Field: path, Msg: msg}
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Struct:
			fields := map[string]reflect.Type{}
			var names []string
			var add func(t reflect.Type)
			add = func(t reflect.Type) {
				for i := range t.NumField() {
					f := t.Field(i)
					name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
					if f.Anonymous && name == "" {
						add(f.Type) // an inline spec: its keys are the struct's own
						continue
					}
					if name == "" || name == "-" {
						continue
					}
					fields[name] = f.Type
					names = append(names, name)
				}
			}
			add(t)
			for _, k := range slices.Sorted(mapKeys(x)) {
				ft, ok := fields[k]
				if !ok {
					return &ConfigError{Field: path + "." + k, Msg: fmt.Sprintf("unknown field (%s takes %s; see docs/config.md)", path, strings.Join(names, ", "))}
				}
				if err := unknownFields(x[k], ft, path+"."+k); err != nil {
					return err
				}
			}
		case reflect.Map:
			for _, k := range slices.Sorted(mapKeys(x)) {
				if err := unknownFields(x[k], t.Elem(), path+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice {
			for i, e := range x {
				if err := unknownFields(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// shapeError says why decoded JSON v cannot be a t ("" when it can).
func shapeError(v any, t reflect.Type) string {
	want := ""
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			want = "a string"
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			want = "true or false"
		}
	case reflect.Int, reflect.Int32, reflect.Int64:
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			want = "an integer"
		}
	case reflect.Slice:
		if _, ok := v.([]any); !ok {
			want = "a list"
		}
	case reflect.Struct, reflect.Map:
		if _, ok := v.(map[string]any); !ok {
			want = "a mapping"
		}
	}
	if want == "" {
		return ""
	}
	got, _ := json.Marshal(v)
	return fmt.Sprintf("%s is not %s", got, want)
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Default fills unset values.
func (c *Config) Default() {
	for i := range c.Policies {
		p := &c.Policies[i]
		if p.FailurePolicy == "" {
			p.FailurePolicy = Fail
		}
		if len(p.ValidationActions) == 0 {
			p.ValidationActions = []string{Deny}
		}
		if p.Timeout.Duration == 0 {
			p.Timeout.Duration = DefaultTimeout
		}
		if p.Pool == 0 {
			p.Pool = DefaultPoolSize
		}
	}
}

var operations = []string{"CREATE", "UPDATE", "DELETE", "CONNECT", "*"}

// Validate checks what can be checked without loading the modules.
func (c *Config) Validate() error {
	names := map[string]bool{}
	for i, p := range c.Policies {
		f := fmt.Sprintf("admission.policies[%d]", i)
		fail := func(key, msg string, args ...any) error {
			return &ConfigError{Field: f + key, Msg: fmt.Sprintf(msg, args...)}
		}
		if err := p.Spec.Validate(modulespec.RowOf("admission"), names); err != nil {
			return fail("."+err.Field, "%s", err.Msg)
		}
		if len(p.Rules) == 0 {
			return fail(".rules", "required: a policy matches nothing it does not name")
		}
		if len(p.Args) > 0 && !json.Valid(p.Args) {
			return fail(".args", "not valid JSON")
		}
		for j, r := range p.Rules {
			rf := fmt.Sprintf(".rules[%d]", j)
			for _, l := range []struct {
				key  string
				vals []string
			}{{"apiGroups", r.APIGroups}, {"apiVersions", r.APIVersions}, {"resources", r.Resources}, {"operations", r.Operations}} {
				if len(l.vals) == 0 {
					return fail(rf+"."+l.key, "required (use [\"*\"] for all)")
				}
			}
			for k, op := range r.Operations {
				if !slices.Contains(operations, op) {
					return fail(fmt.Sprintf("%s.operations[%d]", rf, k), "%q: must be one of %s", op, strings.Join(operations, ", "))
				}
			}
			for k, res := range r.Resources {
				main, sub, _ := strings.Cut(res, "/")
				if main == "" || strings.Contains(sub, "/") || strings.HasSuffix(res, "/") {
					return fail(fmt.Sprintf("%s.resources[%d]", rf, k), "%q: must be a resource with an optional subresource (pods, pods/status, pods/*, *, */*)", res)
				}
			}
		}
		for _, sel := range []struct {
			key string
			s   *metav1.LabelSelector
		}{{".namespaceSelector", p.NamespaceSelector}, {".objectSelector", p.ObjectSelector}} {
			if sel.s == nil {
				continue
			}
			if _, err := metav1.LabelSelectorAsSelector(sel.s); err != nil {
				return fail(sel.key, "%v", err)
			}
		}
		seen := map[string]bool{}
		for k, a := range p.ValidationActions {
			if a != Deny && a != Warn && a != Audit {
				return fail(fmt.Sprintf(".validationActions[%d]", k), "%q: must be Deny, Warn or Audit", a)
			}
			if seen[a] {
				return fail(fmt.Sprintf(".validationActions[%d]", k), "%q is listed twice", a)
			}
			seen[a] = true
		}
		if seen[Deny] && seen[Warn] {
			return fail(".validationActions", "Deny and Warn may not be used together (Deny already tells the client)")
		}
		for k, res := range p.Capabilities {
			if res == "" || strings.ContainsAny(res, "/*") {
				return fail(fmt.Sprintf(".capabilities[%d]", k), "%q: must be a resource name (namespaces, configmaps, ...)", res)
			}
		}
		// the API tier's checks (names, expressions that compile to a bool, at most 64)
		if errs := policyvalidation.ValidateMatchConditions(p.MatchConditions, validationfield.NewPath("admission").Child("policies").Index(i).Child("matchConditions")); len(errs) > 0 {
			return &ConfigError{Field: errs[0].Field, Msg: errs[0].ErrorBody()}
		}
	}
	return nil
}

// selector compiles a label selector; nil matches everything.
func selector(s *metav1.LabelSelector) labels.Selector {
	if s == nil {
		return labels.Everything()
	}
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return labels.Nothing() // Validate refused it
	}
	return sel
}
