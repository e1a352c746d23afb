// Package config is the `scheduler:` section of the wasmkube config file, shaped like
// upstream's KubeSchedulerConfiguration: profiles chosen by spec.schedulerName, plugins
// enabled and disabled per extension point, plugin args, percentageOfNodesToScore,
// parallelism, and the wasm modules that become plugins.
//
// Decoding is strict: an unknown key anywhere in the section is an error that names it.
// Whether a plugin name exists is checked when a profile is built (core/scheduler/runtime),
// because wasm plugins join the registry only then.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
)

// DefaultSchedulerName is the profile pods get when spec.schedulerName is empty.
const DefaultSchedulerName = "default-scheduler"

// DefaultParallelism is the number of workers Filter and Score run with.
const DefaultParallelism = 16

// DefaultExplainTopNodes is how many of the best nodes an explanation lists.
const DefaultExplainTopNodes = 10

// Config is the `scheduler:` section.
type Config struct {
	// Profiles; when empty, one profile named default-scheduler with the default plugins.
	Profiles []Profile `json:"profiles,omitempty"`
	// PercentageOfNodesToScore: 0 (or unset) is adaptive, as upstream: all nodes up to
	// 100, then 50% shrinking by 1% per 125 nodes to a floor of 5%.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// Parallelism is the worker count of Filter and Score (default 16).
	Parallelism int32 `json:"parallelism,omitempty"`
	// ExplainTopNodes is how many of the best nodes the explanation annotation lists
	// (default 10; a negative value turns the annotation off).
	ExplainTopNodes *int32 `json:"explainTopNodes,omitempty"`
	// Explorer sizes the decision records (docs/explorer.md).
	Explorer *Explorer `json:"explorer,omitempty"`
	// WasmPlugins are modules registered as plugins under their names.
	WasmPlugins []WasmPlugin `json:"wasmPlugins,omitempty"`
}

// DefaultExplorerNodesPerAttempt is how many feasible and how many rejected nodes an
// attempt's record lists unless configured (every rejected node is also counted per
// plugin and reason). 20, not more: a whole record's cost grows with its rows, and the
// scheduler sends as many whole records as 1% of a core pays for (docs/explorer.md).
const DefaultExplorerNodesPerAttempt = 20

// Explorer sizes the scheduler's decision records.
type Explorer struct {
	// Records is the size of the ring (default 10000; negative: no records).
	Records *int32 `json:"records,omitempty"`
	// NodesPerAttempt bounds an attempt's matrix: at most that many feasible nodes (the
	// best) and that many rejected ones (default 20).
	NodesPerAttempt *int32 `json:"nodesPerAttempt,omitempty"`
}

// Profile is one scheduler profile.
type Profile struct {
	SchedulerName string         `json:"schedulerName"`
	Plugins       *Plugins       `json:"plugins,omitempty"`
	PluginConfig  []PluginConfig `json:"pluginConfig,omitempty"`
	// PercentageOfNodesToScore overrides the section-wide value for this profile.
	PercentageOfNodesToScore *int32 `json:"percentageOfNodesToScore,omitempty"`
	// Batching (default true, as upstream's OpportunisticBatching) places a pod from the
	// ranking of the previous full pass when their signatures are equal
	// (docs/scheduler.md "Batching").
	Batching *bool `json:"batching,omitempty"`
}

// BatchingEnabled is Batching with its default (true).
func (p *Profile) BatchingEnabled() bool { return p.Batching == nil || *p.Batching }

// Plugins lists, per extension point, plugins enabled and disabled on top of the
// defaults. MultiPoint enables a plugin at every extension point it implements.
type Plugins struct {
	MultiPoint PluginSet `json:"multiPoint,omitempty"`
	PreFilter  PluginSet `json:"preFilter,omitempty"`
	Filter     PluginSet `json:"filter,omitempty"`
	PostFilter PluginSet `json:"postFilter,omitempty"`
	PreScore   PluginSet `json:"preScore,omitempty"`
	Score      PluginSet `json:"score,omitempty"`
	Reserve    PluginSet `json:"reserve,omitempty"`
	Permit     PluginSet `json:"permit,omitempty"`
	PreBind    PluginSet `json:"preBind,omitempty"`
	Bind       PluginSet `json:"bind,omitempty"`
	PostBind   PluginSet `json:"postBind,omitempty"`
}

// PluginSet is the enabled and disabled plugins of one extension point. A disabled
// entry named "*" disables every default plugin of the point.
type PluginSet struct {
	Enabled  []Plugin `json:"enabled,omitempty"`
	Disabled []Plugin `json:"disabled,omitempty"`
}

// Plugin names a plugin; Weight applies to Score only (default 1).
type Plugin struct {
	Name   string `json:"name"`
	Weight int32  `json:"weight,omitempty"`
}

// PluginConfig is the args of one plugin, handed to its factory as JSON.
type PluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// WasmPlugin declares a wasm module that becomes a plugin named Name. The loader
// (plugins/, through scheduler.Options.WasmLoader) compiles, checks and smoke-runs it;
// zero values of Timeout, MemoryLimit and Pool mean the loader's defaults.
//
// Its keys are the module spec every policy kind shares (modulespec.Spec: name, path,
// failurePolicy, timeout, memoryLimit, pool). FailurePolicy "Fail" (the default) makes an
// error or trap reject the node/pod; "Ignore" treats the plugin as having allowed it.
type WasmPlugin struct {
	modulespec.Spec `json:",inline"`
}

// Extension point names, as in config keys, metrics and explanations.
const (
	PreFilter  = "PreFilter"
	Filter     = "Filter"
	PostFilter = "PostFilter"
	PreScore   = "PreScore"
	Score      = "Score"
	Reserve    = "Reserve"
	Permit     = "Permit"
	PreBind    = "PreBind"
	Bind       = "Bind"
	PostBind   = "PostBind"
)

// ExtensionPoints in the order a cycle runs them.
var ExtensionPoints = []string{PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Permit, PreBind, Bind, PostBind}

// Set returns the PluginSet of an extension point.
func (p *Plugins) Set(point string) *PluginSet {
	switch point {
	case PreFilter:
		return &p.PreFilter
	case Filter:
		return &p.Filter
	case PostFilter:
		return &p.PostFilter
	case PreScore:
		return &p.PreScore
	case Score:
		return &p.Score
	case Reserve:
		return &p.Reserve
	case Permit:
		return &p.Permit
	case PreBind:
		return &p.PreBind
	case Bind:
		return &p.Bind
	case PostBind:
		return &p.PostBind
	}
	return nil
}

// JSONKey is the config key of an extension point ("preFilter").
func JSONKey(point string) string { return strings.ToLower(point[:1]) + point[1:] }

// Error is a configuration error; Field is the path of the offending key.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "scheduler config: " + e.Msg
	}
	return "scheduler config: " + e.Field + ": " + e.Msg
}

// Parse reads the `scheduler:` section of a whole wasmkube config file (YAML or JSON);
// other top-level sections belong to other components and are ignored. A file without
// the section gives the defaults. The result is defaulted and validated.
func Parse(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, &Error{Msg: "invalid YAML: " + err.Error()}
	}
	var top map[string]json.RawMessage
	if len(bytes.TrimSpace(js)) > 0 && string(bytes.TrimSpace(js)) != "null" {
		if err := json.Unmarshal(js, &top); err != nil {
			return nil, &Error{Msg: "the file must be a mapping of sections: " + err.Error()}
		}
	}
	return ParseSection(top["scheduler"])
}

// ParseSection decodes the JSON of the `scheduler:` section alone (nil gives defaults).
func ParseSection(section json.RawMessage) (*Config, error) {
	cfg := &Config{}
	if len(section) > 0 && string(section) != "null" {
		dec := json.NewDecoder(bytes.NewReader(section))
		dec.DisallowUnknownFields()
		if err := dec.Decode(cfg); err != nil {
			return nil, decodeError(err)
		}
	}
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func decodeError(err error) error {
	msg := err.Error()
	if i := strings.Index(msg, "unknown field "); i >= 0 {
		return &Error{Field: "scheduler", Msg: msg[i:] + " (check the spelling against docs/config.md)"}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &Error{Field: "scheduler." + modulespec.FieldPath(te.Field), Msg: fmt.Sprintf("cannot use %s as %s", te.Value, te.Type)}
	}
	return &Error{Field: "scheduler", Msg: msg}
}

// Default fills unset values.
func (c *Config) Default() {
	if len(c.Profiles) == 0 {
		c.Profiles = []Profile{{SchedulerName: DefaultSchedulerName}}
	}
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	for i := range c.WasmPlugins {
		if c.WasmPlugins[i].FailurePolicy == "" {
			c.WasmPlugins[i].FailurePolicy = "Fail"
		}
	}
}

// Validate checks what can be checked without the plugin registry.
func (c *Config) Validate() error {
	if c.Parallelism < 0 {
		return &Error{Field: "scheduler.parallelism", Msg: fmt.Sprintf("must be positive, got %d", c.Parallelism)}
	}
	if err := validPercentage("scheduler.percentageOfNodesToScore", c.PercentageOfNodesToScore); err != nil {
		return err
	}
	names := map[string]bool{}
	for i, p := range c.Profiles {
		f := fmt.Sprintf("scheduler.profiles[%d]", i)
		if p.SchedulerName == "" {
			return &Error{Field: f + ".schedulerName", Msg: "required"}
		}
		if names[p.SchedulerName] {
			return &Error{Field: f + ".schedulerName", Msg: fmt.Sprintf("duplicate profile %q", p.SchedulerName)}
		}
		names[p.SchedulerName] = true
		if err := validPercentage(f+".percentageOfNodesToScore", p.PercentageOfNodesToScore); err != nil {
			return err
		}
		seen := map[string]bool{}
		for j, pc := range p.PluginConfig {
			if pc.Name == "" {
				return &Error{Field: fmt.Sprintf("%s.pluginConfig[%d].name", f, j), Msg: "required"}
			}
			if seen[pc.Name] {
				return &Error{Field: fmt.Sprintf("%s.pluginConfig[%d].name", f, j), Msg: fmt.Sprintf("duplicate args for plugin %q", pc.Name)}
			}
			seen[pc.Name] = true
		}
		if p.Plugins != nil {
			for _, point := range append([]string{"MultiPoint"}, ExtensionPoints...) {
				var set *PluginSet
				if point == "MultiPoint" {
					set = &p.Plugins.MultiPoint
				} else {
					set = p.Plugins.Set(point)
				}
				for j, e := range set.Enabled {
					ef := fmt.Sprintf("%s.plugins.%s.enabled[%d]", f, JSONKey(point), j)
					if e.Name == "" || e.Name == "*" {
						return &Error{Field: ef + ".name", Msg: "a plugin name is required (\"*\" is only valid in disabled)"}
					}
					if e.Weight < 0 {
						return &Error{Field: ef + ".weight", Msg: fmt.Sprintf("must not be negative, got %d", e.Weight)}
					}
				}
				for j, d := range set.Disabled {
					if d.Name == "" {
						return &Error{Field: fmt.Sprintf("%s.plugins.%s.disabled[%d].name", f, JSONKey(point), j), Msg: "required"}
					}
				}
			}
		}
	}
	wn := map[string]bool{}
	for i, w := range c.WasmPlugins {
		if err := w.Validate(modulespec.RowOf("scheduler"), wn); err != nil {
			return &Error{Field: fmt.Sprintf("scheduler.wasmPlugins[%d].%s", i, err.Field), Msg: err.Msg}
		}
	}
	return nil
}

func validPercentage(field string, p *int32) error {
	if p != nil && (*p < 0 || *p > 100) {
		return &Error{Field: field, Msg: fmt.Sprintf("must be between 0 and 100, got %d", *p)}
	}
	return nil
}

// Profile returns the profile named name, or nil.
func (c *Config) Profile(name string) *Profile {
	for i := range c.Profiles {
		if c.Profiles[i].SchedulerName == name {
			return &c.Profiles[i]
		}
	}
	return nil
}

// Args returns the pluginConfig args of a plugin in the profile (nil when none).
func (p *Profile) Args(plugin string) json.RawMessage {
	for _, pc := range p.PluginConfig {
		if pc.Name == plugin {
			return pc.Args
		}
	}
	return nil
}

// DefaultPlugins is, per extension point, the default plugins in order with their
// weights (Score only), as upstream's defaults (ImageLocality, the volume limit/zone
// plugins and DRA allocation aside, which need node agents that report images, volumes
// and devices; VolumeBinding is in, for local-path claims, and DynamicResources, which
// admits only pods whose ResourceClaims are already allocated).
func DefaultPlugins() map[string][]Plugin {
	return map[string][]Plugin{
		PreFilter:  {{Name: "NodeAffinity"}, {Name: "NodePorts"}, {Name: "NodeResourcesFit"}, {Name: "VolumeBinding"}, {Name: "DynamicResources"}, {Name: "PodTopologySpread"}, {Name: "InterPodAffinity"}, {Name: "GangScheduling"}},
		Filter:     {{Name: "NodeUnschedulable"}, {Name: "NodeName"}, {Name: "TaintToleration"}, {Name: "NodeAffinity"}, {Name: "NodePorts"}, {Name: "NodeResourcesFit"}, {Name: "VolumeBinding"}, {Name: "DynamicResources"}, {Name: "PodTopologySpread"}, {Name: "InterPodAffinity"}},
		PostFilter: {{Name: "DefaultPreemption"}},
		PreScore:   {{Name: "TaintToleration"}, {Name: "NodeAffinity"}, {Name: "NodeResourcesFit"}, {Name: "PodTopologySpread"}, {Name: "InterPodAffinity"}, {Name: "NodeResourcesBalancedAllocation"}},
		Score: {{Name: "TaintToleration", Weight: 3}, {Name: "NodeAffinity", Weight: 2}, {Name: "NodeResourcesFit", Weight: 1},
			{Name: "PodTopologySpread", Weight: 2}, {Name: "InterPodAffinity", Weight: 2}, {Name: "NodeResourcesBalancedAllocation", Weight: 1}},
		Reserve: {{Name: "GangScheduling"}},
		Permit:  {{Name: "GangScheduling"}},
		PreBind: {{Name: "VolumeBinding"}, {Name: "DynamicResources"}},
		Bind:    {{Name: "DefaultBinder"}},
	}
}

// Resolve returns, per extension point, the plugins of the profile: the defaults minus
// the disabled ones ("*" disables them all), then the enabled ones (enabling a default
// plugin again replaces its weight). implements tells whether a plugin implements an
// extension point; it is used for multiPoint and to reject a plugin enabled at a point
// it does not implement. known tells whether a plugin name is registered.
func (p *Profile) Resolve(known func(name string) bool, implements func(name, point string) bool) (map[string][]Plugin, error) {
	defs := DefaultPlugins()
	out := map[string][]Plugin{}
	plugins := p.Plugins
	if plugins == nil {
		plugins = &Plugins{}
	}
	f := "scheduler.profiles[" + p.SchedulerName + "].plugins"
	for j, e := range plugins.MultiPoint.Enabled {
		if !known(e.Name) {
			return nil, &Error{Field: fmt.Sprintf("%s.multiPoint.enabled[%d].name", f, j), Msg: fmt.Sprintf("unknown plugin %q", e.Name)}
		}
	}
	for _, point := range ExtensionPoints {
		set := plugins.Set(point)
		disabled := map[string]bool{}
		for _, d := range append(append([]Plugin(nil), plugins.MultiPoint.Disabled...), set.Disabled...) {
			disabled[d.Name] = true
		}
		var list []Plugin
		if !disabled["*"] {
			for _, d := range defs[point] {
				if !disabled[d.Name] {
					list = append(list, d)
				}
			}
		}
		add := func(e Plugin) {
			if point == Score && e.Weight == 0 {
				e.Weight = 1
			}
			for i := range list {
				if list[i].Name == e.Name {
					list[i] = e
					return
				}
			}
			list = append(list, e)
		}
		for _, e := range plugins.MultiPoint.Enabled {
			if implements(e.Name, point) {
				add(e)
			}
		}
		for j, e := range set.Enabled {
			ef := fmt.Sprintf("%s.%s.enabled[%d].name", f, JSONKey(point), j)
			if !known(e.Name) {
				return nil, &Error{Field: ef, Msg: fmt.Sprintf("unknown plugin %q", e.Name)}
			}
			if !implements(e.Name, point) {
				return nil, &Error{Field: ef, Msg: fmt.Sprintf("plugin %q does not implement %s", e.Name, point)}
			}
			add(e)
		}
		for j, d := range set.Disabled {
			if d.Name != "*" && !known(d.Name) {
				return nil, &Error{Field: fmt.Sprintf("%s.%s.disabled[%d].name", f, JSONKey(point), j), Msg: fmt.Sprintf("unknown plugin %q", d.Name)}
			}
		}
		if len(list) > 0 {
			out[point] = list
		}
	}
	for j, pc := range p.PluginConfig {
		if !known(pc.Name) {
			return nil, &Error{Field: fmt.Sprintf("scheduler.profiles[%s].pluginConfig[%d].name", p.SchedulerName, j), Msg: fmt.Sprintf("unknown plugin %q", pc.Name)}
		}
	}
	return out, nil
}
