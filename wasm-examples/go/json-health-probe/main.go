// Command json-health-probe is a wasmkube probe plugin (readiness or liveness): it sends
// GET <path> to the pod's <port>, parses the JSON body and passes when the top-level
// <field> equals <value>, as in
//
//	{"port": 8080, "path": "/health", "field": "status", "value": "ok"}
//
// "ready when /health says 200 and its JSON says the cache is warm" without an exec probe,
// a shell or tools in the image.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/probe"
)

// Args are the plugin's args; all are required.
type Args struct {
	Port  int             `json:"port"`
	Path  string          `json:"path"`
	Field string          `json:"field"`
	Value json.RawMessage `json:"value"`
}

// Config is Args checked and decoded, the same in every instance.
type Config struct {
	Port  int
	Path  string
	Field string
	// Want is Value decoded (string, float64, bool, nil, map or slice); WantText is its
	// JSON, for reasons.
	Want     any
	WantText string
}

var cfg *Config

func init() {
	sdk.OnInit(func() (err error) {
		cfg, err = Parse(sdk.Args())
		return err
	})
	probe.Register(Probe)
}

// Parse checks the args: a typo in a key or a missing value fails the plugin's load with
// the field at fault instead of failing every probe.
func Parse(args []byte) (*Config, error) {
	if len(args) == 0 {
		return nil, errors.New(`args are required, e.g. {"port": 8080, "path": "/health", "field": "status", "value": "ok"}`)
	}
	var a Args
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	switch {
	case a.Port < 1 || a.Port > 65535:
		return nil, fmt.Errorf("args.port: %d is not a port (1..65535)", a.Port)
	case !strings.HasPrefix(a.Path, "/") || strings.HasPrefix(a.Path, "//"):
		return nil, fmt.Errorf("args.path: %q must start with a single /", a.Path)
	case a.Field == "":
		return nil, errors.New("args.field: the top-level field to compare is required")
	case len(a.Value) == 0:
		return nil, errors.New("args.value: the value the field must have is required")
	}
	c := &Config{Port: a.Port, Path: a.Path, Field: a.Field, WantText: compact(a.Value)}
	if err := json.Unmarshal(a.Value, &c.Want); err != nil {
		return nil, fmt.Errorf("args.value: %w", err)
	}
	return c, nil
}

// Probe asks the pod and decides.
func Probe(pod sdk.Pod, c sdk.Container) sdk.Status {
	resp, err := sdk.HTTPGet(cfg.Port, cfg.Path)
	if err != nil {
		// Refused, reset or timed out: the application is not healthy, as for an httpGet
		// probe.
		return probe.Failure(err.Error())
	}
	return cfg.Decide(resp.Status, resp.Body())
}

// Decide is the verdict for a response: a 2xx status whose body is a JSON object with
// Field equal to Want. A redirect fails: its body is not the health document, and the
// host does not follow it.
func (c *Config) Decide(status int, body []byte) sdk.Status {
	if status < 200 || status > 299 {
		return probe.Failuref("GET %s: HTTP %d", c.Path, status)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(body, &doc); err != nil {
		return probe.Failuref("GET %s: the body is not a JSON object: %v", c.Path, err)
	}
	raw, ok := doc[c.Field]
	if !ok {
		return probe.Failuref("GET %s: no field %q in the body", c.Path, c.Field)
	}
	var got any
	if err := json.Unmarshal(raw, &got); err != nil || !reflect.DeepEqual(got, c.Want) {
		return probe.Failuref("GET %s: %s is %s, want %s", c.Path, c.Field, compact(raw), c.WantText)
	}
	return probe.Success()
}

// compact is raw JSON on one line, cut to keep reasons short.
func compact(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		b.Reset()
		b.Write(raw)
	}
	s := b.String()
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return s
}

func main() {}
