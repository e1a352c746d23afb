// Command threshold-liveness is a wasmkube probe plugin (meant for liveness): it sends GET
// <path> to the pod's <port>, finds the line "<metric> <number>" in the text body (the
// Prometheus text format's unlabelled sample) and fails when the number exceeds <max>:
//
//	{"port": 8080, "path": "/metrics", "metric": "errors_total", "max": 10}
//
// A container whose error count runs away is restarted, without an exec probe.
// wasm-examples/c/threshold-liveness is the same plugin in C, with the same verdicts and
// reasons.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/probe"
)

// Args are the plugin's args; all are required.
type Args struct {
	Port   int             `json:"port"`
	Path   string          `json:"path"`
	Metric string          `json:"metric"`
	Max    json.RawMessage `json:"max"`
}

// Config is Args checked, the same in every instance.
type Config struct {
	Port   int
	Path   string
	Metric string
	Max    float64
	// MaxText is max as the args spell it, for reasons.
	MaxText string
}

var cfg *Config

func init() {
	sdk.OnInit(func() (err error) {
		cfg, err = Parse(sdk.Args())
		return err
	})
	probe.Register(Probe)
}

// Parse checks the args, so that a bad config fails the plugin's load with the field at
// fault.
func Parse(args []byte) (*Config, error) {
	if len(args) == 0 {
		return nil, errors.New(`args are required, e.g. {"port": 8080, "path": "/metrics", "metric": "errors_total", "max": 10}`)
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
	case !validMetric(a.Metric):
		return nil, fmt.Errorf("args.metric: %q is not a metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)", a.Metric)
	}
	maxText := string(bytes.TrimSpace(a.Max))
	m, ok := parseValue(maxText)
	if !ok || math.IsNaN(m) {
		return nil, errors.New("args.max: a number is required")
	}
	return &Config{Port: a.Port, Path: a.Path, Metric: a.Metric, Max: m, MaxText: maxText}, nil
}

// Probe asks the pod and decides.
func Probe(pod sdk.Pod, c sdk.Container) sdk.Status {
	resp, err := sdk.HTTPGet(cfg.Port, cfg.Path)
	if err != nil {
		return probe.Failure(err.Error())
	}
	return cfg.Decide(resp.Status, resp.Body())
}

// Decide is the verdict for a response: a 2xx status whose body has the metric's line with
// a number no larger than Max.
func (c *Config) Decide(status int, body []byte) sdk.Status {
	if status < 200 || status > 299 {
		return probe.Failuref("GET %s: HTTP %d", c.Path, status)
	}
	text, ok := Find(body, c.Metric)
	if !ok {
		return probe.Failuref("GET %s: no line %q", c.Path, c.Metric+" <number>")
	}
	v, ok := parseValue(text)
	text = short(text)
	switch {
	case !ok:
		return probe.Failuref("%s: %q is not a number", c.Metric, text)
	case math.IsNaN(v):
		return probe.Failuref("%s is NaN", c.Metric)
	case v > c.Max:
		return probe.Failuref("%s is %s, above the max %s", c.Metric, text, c.MaxText)
	}
	return probe.Success()
}

// short cuts a sample's text for a reason: the body is the application's, up to 64 KiB.
func short(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}

// Find returns the value of the first line "<metric> <value> [timestamp]" of a text body;
// comments (#) and labelled samples (metric{...}) are skipped.
func Find(body []byte, metric string) (string, bool) {
	for len(body) > 0 {
		var line []byte
		line, body, _ = bytes.Cut(body, []byte("\n"))
		name, rest, ok := cutSpace(string(line))
		if !ok || name != metric {
			continue
		}
		value, _, _ := cutSpace(rest)
		return value, value != ""
	}
	return "", false
}

// cutSpace returns the first blank-separated word of s and what follows it.
func cutSpace(s string) (word, rest string, ok bool) {
	s = strings.TrimLeft(s, " \t\r")
	if s == "" {
		return "", "", false
	}
	if i := strings.IndexAny(s, " \t\r"); i >= 0 {
		return s[:i], s[i:], true
	}
	return s, "", true
}

// parseValue reads a sample value as the text format spells it: a decimal number with an
// optional exponent, or +Inf, -Inf, NaN. (strconv alone would also take hex floats and
// "infinity", which the C version does not.)
func parseValue(s string) (float64, bool) {
	switch s {
	case "+Inf", "Inf":
		return math.Inf(1), true
	case "-Inf":
		return math.Inf(-1), true
	case "NaN":
		return math.NaN(), true
	}
	if s == "" || strings.Trim(s, "0123456789+-.eE") != "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return v, true // beyond float64: ±Inf or 0, as C's arithmetic makes it
	}
	return v, err == nil
}

func validMetric(s string) bool {
	for i, r := range s {
		ok := r == '_' || r == ':' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

func main() {}
