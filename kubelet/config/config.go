// Package config is the `kubelet:` section of the wasmkube config file: the wasm hook
// plugins a node declares (probe and preStop logic, docs/abi.md section 4.7) and the
// selectors that attach them to pods without an annotation. `wasmkube up --config FILE`
// and `wasmkube kubelet --config FILE` read it, and reload it when the file changes.
//
// Decoding is strict: an unknown key is an error that names its path
// (kubelet.hookPlugins[1]: unknown field "timout").
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// Config is the `kubelet:` section.
type Config struct {
	// HookPlugins are the wasm modules pods may name in a hooks.wasmkube.io annotation.
	HookPlugins []HookPlugin `json:"hookPlugins,omitempty"`
	// Selectors attach a declared plugin to pods by namespace and pod labels.
	Selectors []Selector `json:"selectors,omitempty"`
}

// HookPlugin declares one wasm module serving probes and/or preStop hooks.
//
// Its module keys are the spec every policy kind shares (modulespec.Spec). Name is what
// pods name in their annotation, and the plugin label of metrics and logs. Timeout caps
// each call (a probe's own limit is its timeoutSeconds, a preStop's the rest of the grace
// period); 0: no cap beyond those. MemoryLimit caps each instance's linear memory
// (default 64Mi). FailurePolicy: Fail (default: a failed call fails the probe) or Ignore
// (it succeeds). Pool is the most instances (parallel calls) of each kind of the plugin;
// 0: DefaultProbePool for probes, DefaultPreStopPool for preStop hooks.
type HookPlugin struct {
	modulespec.Spec `json:",inline"`
	// Args is the JSON the guest reads with the args host function.
	Args json.RawMessage `json:"args,omitempty"`
}

// Selector attaches Plugin as the Kind hook of the containers of the pods it selects. An
// annotation on the pod wins over a selector; of several matching selectors the first wins.
type Selector struct {
	Plugin string `json:"plugin"`
	// Kind is startup, liveness, readiness or prestop.
	Kind string `json:"kind"`
	// Container names the container; empty: every container of the pod.
	Container string `json:"container,omitempty"`
	// NamespaceSelector and PodSelector select by labels; nil selects everything.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	PodSelector       *metav1.LabelSelector `json:"podSelector,omitempty"`
}

// The hook kinds of annotations and selectors.
const (
	KindStartup   = "startup"
	KindLiveness  = "liveness"
	KindReadiness = "readiness"
	KindPreStop   = "prestop"
)

// Kinds are the hook kinds, in the order a container meets them.
var Kinds = []string{KindStartup, KindLiveness, KindReadiness, KindPreStop}

// Failure policies.
const (
	Fail   = "Fail"
	Ignore = "Ignore"
)

// Default instance counts of a plugin, per kind, when its config sets no pool. Probe calls
// are short (one HTTP round trip) and a few instances serve a node's probes; a preStop
// drain holds its instance for up to the grace period, so pods stopped together each need
// one. Instances are created on demand, so an idle kind costs one.
const (
	DefaultProbePool   = 4
	DefaultPreStopPool = 32
)

// Error is a configuration error; Field is the path of the offending key.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "kubelet config: " + e.Msg
	}
	return "kubelet config: " + e.Field + ": " + e.Msg
}

// Parse reads the `kubelet:` section of a whole wasmkube config file (YAML or JSON); the
// other sections belong to other components. A file without the section is an empty Config.
func Parse(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &Error{Msg: "invalid YAML: " + err.Error()}
	}
	var top map[string]json.RawMessage
	if t := bytes.TrimSpace(js); len(t) > 0 && string(t) != "null" {
		if err := json.Unmarshal(js, &top); err != nil {
			return nil, &Error{Msg: "the file must be a mapping of sections: " + err.Error()}
		}
	}
	return ParseSection(top["kubelet"])
}

// ParseSection decodes the JSON of the `kubelet:` section alone (nil: an empty Config),
// defaults and validates it.
func ParseSection(section json.RawMessage) (*Config, error) {
	cfg := &Config{}
	if len(section) == 0 || string(section) == "null" {
		return cfg, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(section, &keys); err != nil {
		return nil, &Error{Field: "kubelet", Msg: "must be a mapping: " + err.Error()}
	}
	for k := range keys {
		if k != "hookPlugins" && k != "selectors" {
			return nil, &Error{Field: "kubelet", Msg: fmt.Sprintf("unknown field %q (known: hookPlugins, selectors; see docs/config.md)", k)}
		}
	}
	var err error
	if cfg.HookPlugins, err = decodeList[HookPlugin]("kubelet.hookPlugins", keys["hookPlugins"]); err != nil {
		return nil, err
	}
	if cfg.Selectors, err = decodeList[Selector]("kubelet.selectors", keys["selectors"]); err != nil {
		return nil, err
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// decodeList decodes a JSON list element by element, so an unknown key's error names the
// element it is in.
func decodeList[T any](field string, raw json.RawMessage) ([]T, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &Error{Field: field, Msg: "must be a list"}
	}
	out := make([]T, len(items))
	for i, it := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		dec := json.NewDecoder(bytes.NewReader(it))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			msg := err.Error()
			if j := strings.Index(msg, "unknown field "); j >= 0 {
				return nil, &Error{Field: f, Msg: msg[j:] + " (check the spelling against docs/config.md)"}
			}
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return nil, &Error{Field: f + "." + modulespec.FieldPath(te.Field), Msg: fmt.Sprintf("cannot use %s as %s", te.Value, te.Type)}
			}
			return nil, &Error{Field: f, Msg: strings.TrimPrefix(msg, "json: ")}
		}
	}
	return out, nil
}

// Default fills unset values.
func (c *Config) Default() {
	for i := range c.HookPlugins {
		p := &c.HookPlugins[i]
		if p.FailurePolicy == "" {
			p.FailurePolicy = Fail
		}
		if len(p.Args) == 0 || string(p.Args) == "null" {
			p.Args = nil
		}
	}
}

// Validate checks names, paths, limits, policies and selectors.
func (c *Config) Validate() error {
	names := map[string]bool{}
	for i, p := range c.HookPlugins {
		f := fmt.Sprintf("kubelet.hookPlugins[%d]", i)
		if err := p.Validate(modulespec.RowOf("kubelet"), names); err != nil {
			return &Error{Field: f + "." + err.Field, Msg: err.Msg}
		}
		if p.Args != nil && !json.Valid(p.Args) {
			return &Error{Field: f + ".args", Msg: "not valid JSON"}
		}
	}
	for i, s := range c.Selectors {
		f := fmt.Sprintf("kubelet.selectors[%d]", i)
		if !names[s.Plugin] {
			return &Error{Field: f + ".plugin", Msg: fmt.Sprintf("%q is not declared under kubelet.hookPlugins", s.Plugin)}
		}
		if !slices.Contains(Kinds, s.Kind) {
			return &Error{Field: f + ".kind", Msg: fmt.Sprintf("%q: must be one of %s", s.Kind, strings.Join(Kinds, ", "))}
		}
		for _, ls := range []struct {
			name string
			sel  *metav1.LabelSelector
		}{{"namespaceSelector", s.NamespaceSelector}, {"podSelector", s.PodSelector}} {
			if _, err := metav1.LabelSelectorAsSelector(ls.sel); err != nil {
				return &Error{Field: f + "." + ls.name, Msg: err.Error()}
			}
		}
	}
	return nil
}

// Plugin returns the declaration of the plugin named name, or nil.
func (c *Config) Plugin(name string) *HookPlugin {
	for i := range c.HookPlugins {
		if c.HookPlugins[i].Name == name {
			return &c.HookPlugins[i]
		}
	}
	return nil
}
