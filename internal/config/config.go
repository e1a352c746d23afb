// Package config reads the wasmkube config file (docs/config.md) strictly: the file is a
// mapping of known sections, and the `server:` and `controller:` sections decode into
// typed structs in which an unknown key, or a value of the wrong type, is an error naming
// the file and the key's path. The sections other components own (`scheduler:`,
// `admission:`, `kubelet:`) are kept raw for them; each decodes its own as strictly.
//
// Precedence (flag > environment > file > default) stays with viper in cmd/wasmkube: this
// package only decides whether the file is well-formed, and hands viper its settings.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// File is the whole config file.
type File struct {
	Server     *Server         `json:"server,omitempty"`
	Controller *Controller     `json:"controller,omitempty"`
	Scheduler  json.RawMessage `json:"scheduler,omitempty"` // core/scheduler/config
	Admission  json.RawMessage `json:"admission,omitempty"` // plugins/admitwasm
	Kubelet    json.RawMessage `json:"kubelet,omitempty"`   // kubelet/hookconfig
	Network    *Network        `json:"network,omitempty"`
}

// Network is the `network:` section, read by `wasmkube kubelet` and `up`.
type Network struct {
	// Backend routes pod traffic between nodes: vxlan, host-gw or none (kubelet/overlay).
	Backend string `json:"backend,omitempty"`
}

// Server is the `server:` section, read by `wasmkube server`.
type Server struct {
	DataDir                  string   `json:"dataDir,omitempty"`
	Listen                   string   `json:"listen,omitempty"`
	EtcdEndpoints            []string `json:"etcdEndpoints,omitempty"`
	LogLevel                 string   `json:"logLevel,omitempty"`
	EncryptionProviderConfig string   `json:"encryptionProviderConfig,omitempty"`
	// TokenAuthFile: static user tokens, upstream's --token-auth-file CSV.
	TokenAuthFile string `json:"tokenAuthFile,omitempty"`
	// DefaultTolerationSeconds is the old key of controller.defaultTolerationSeconds: a
	// setting has one key, so it is refused with a message saying where it went.
	DefaultTolerationSeconds *int64 `json:"defaultTolerationSeconds,omitempty"`
}

// Controller is the `controller:` section, read by `wasmkube controller-manager`,
// `server` and `up`.
type Controller struct {
	// NodeMonitorGracePeriod is a Go duration (40s).
	NodeMonitorGracePeriod string `json:"nodeMonitorGracePeriod,omitempty"`
	// DefaultTolerationSeconds: the not-ready/unreachable tolerations the API server adds
	// to pods, and the eviction delay the controller gives pods without one.
	DefaultTolerationSeconds *int64 `json:"defaultTolerationSeconds,omitempty"`
	// ClusterCIDR is the range node IPAM gives each Node's spec.podCIDR from
	// (10.42.0.0/16), in subnets of NodeCIDRMaskSize bits (24).
	ClusterCIDR      string `json:"clusterCIDR,omitempty"`
	NodeCIDRMaskSize *int   `json:"nodeCIDRMaskSize,omitempty"`
}

// Error is a config file error: the file, the key's path (server.listen) and what is wrong.
type Error struct {
	File, Key, Msg string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("config %s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("config %s: %s: %s", e.File, e.Key, e.Msg)
}

// Load reads and checks the file at path. It returns the decoded file and its JSON form
// (what viper is then given, so viper and this package read the same bytes).
func Load(path string) (*File, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read config %s: %w", path, err)
	}
	f, js, err := Parse(data)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			ce.File = path
		}
		return nil, nil, err
	}
	return f, js, nil
}

// Parse checks a config file's bytes (YAML or JSON); Error.File is left empty.
func Parse(data []byte) (*File, []byte, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, &Error{Msg: "invalid YAML: " + err.Error()}
	}
	f := &File{}
	trimmed := bytes.TrimSpace(js)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return f, []byte("{}"), nil
	}
	if trimmed[0] != '{' {
		return nil, nil, &Error{Msg: "the file must be a mapping of sections (server, controller, scheduler, admission, kubelet, network)"}
	}
	strict, err := kjson.UnmarshalStrict(js, f, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, nil, decodeError(err)
	}
	if len(strict) > 0 {
		return nil, nil, strictError(strict)
	}
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	return f, js, nil
}

// known lists a struct level's keys for the unknown-key message.
var known = map[string][]string{
	"":           {"server", "controller", "scheduler", "admission", "kubelet", "network"},
	"server":     {"dataDir", "listen", "etcdEndpoints", "logLevel", "encryptionProviderConfig", "tokenAuthFile"},
	"controller": {"nodeMonitorGracePeriod", "defaultTolerationSeconds", "clusterCIDR", "nodeCIDRMaskSize"},
	"network":    {"backend"},
}

// strictError names the first unknown or duplicate key (sigs.k8s.io/json reports the
// path: `unknown field "server.listn"`).
func strictError(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	sort.Strings(msgs)
	m := msgs[0]
	if rest, ok := strings.CutPrefix(m, "unknown field "); ok {
		key := strings.Trim(rest, `"`)
		parent := ""
		if i := strings.LastIndex(key, "."); i >= 0 {
			parent = key[:i]
		}
		msg := "unknown key"
		if ks, ok := known[parent]; ok {
			msg += " (known here: " + strings.Join(ks, ", ") + "; see docs/config.md)"
		}
		return &Error{Key: key, Msg: msg}
	}
	if rest, ok := strings.CutPrefix(m, "duplicate field "); ok {
		return &Error{Key: strings.Trim(rest, `"`), Msg: "set twice"}
	}
	return &Error{Msg: m}
}

func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		key := te.Field
		if te.Struct == "File" && key == "" {
			key = "(top level)"
		}
		want := jsonKind(te.Type.Kind().String())
		if durationKeys[key] {
			want = "a duration such as 40s"
		}
		return &Error{Key: key, Msg: fmt.Sprintf("cannot use a %s here: want %s", te.Value, want)}
	}
	return &Error{Msg: err.Error()}
}

// durationKeys are strings holding Go durations, named so in type errors.
var durationKeys = map[string]bool{"controller.nodeMonitorGracePeriod": true}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice":
		return "a list"
	case "int64", "int", "int32":
		return "an integer"
	case "struct", "map", "ptr":
		return "a mapping"
	}
	return goKind
}

func (f *File) validate() error {
	if s := f.Server; s != nil && s.DefaultTolerationSeconds != nil {
		return &Error{Key: "server.defaultTolerationSeconds", Msg: "moved to controller.defaultTolerationSeconds, the one key for this setting (read by server, up and controller-manager; the flag --default-toleration-seconds and WASMKUBE_DEFAULT_TOLERATION_SECONDS still override it)"}
	}
	if c := f.Controller; c != nil {
		if g := c.NodeMonitorGracePeriod; g != "" {
			if d, err := time.ParseDuration(g); err != nil || d <= 0 {
				return &Error{Key: "controller.nodeMonitorGracePeriod", Msg: fmt.Sprintf("%q is not a positive duration (for example 40s)", g)}
			}
		}
		if t := c.DefaultTolerationSeconds; t != nil && *t < 0 {
			return &Error{Key: "controller.defaultTolerationSeconds", Msg: fmt.Sprintf("%d must not be negative", *t)}
		}
	}
	return nil
}
