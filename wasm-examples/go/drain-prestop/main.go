// Command drain-prestop is a wasmkube preStop plugin: when a container is stopped it asks
// the application to drain (GET <drainPath>), then polls <inflightPath> every <intervalMs>
// until its body is 0, and never past the grace period: the call's time limit is what is
// left of it, and sdk.Sleep stops there. Then the kubelet sends SIGTERM as usual.
//
//	{"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 500}
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/prestop"
)

// Args are the plugin's args; intervalMs defaults to 500.
type Args struct {
	Port         int    `json:"port"`
	DrainPath    string `json:"drainPath"`
	InflightPath string `json:"inflightPath"`
	IntervalMs   *int   `json:"intervalMs"`
}

// Config is Args checked, the same in every instance.
type Config struct {
	Port                    int
	DrainPath, InflightPath string
	Interval                time.Duration
}

var cfg *Config

func init() {
	sdk.OnInit(func() (err error) {
		cfg, err = Parse(sdk.Args())
		return err
	})
	prestop.Register(PreStop)
}

// Parse checks the args, so that a bad config fails the plugin's load with the field at
// fault.
func Parse(args []byte) (*Config, error) {
	if len(args) == 0 {
		return nil, errors.New(`args are required, e.g. {"port": 8080, "drainPath": "/drain", "inflightPath": "/inflight", "intervalMs": 500}`)
	}
	var a Args
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("args: %w", err)
	}
	if a.Port < 1 || a.Port > 65535 {
		return nil, fmt.Errorf("args.port: %d is not a port (1..65535)", a.Port)
	}
	for _, p := range []struct{ name, path string }{{"drainPath", a.DrainPath}, {"inflightPath", a.InflightPath}} {
		if !strings.HasPrefix(p.path, "/") || strings.HasPrefix(p.path, "//") {
			return nil, fmt.Errorf("args.%s: %q must start with a single /", p.name, p.path)
		}
	}
	c := &Config{Port: a.Port, DrainPath: a.DrainPath, InflightPath: a.InflightPath, Interval: 500 * time.Millisecond}
	if a.IntervalMs != nil {
		if *a.IntervalMs < 10 || *a.IntervalMs > 60000 {
			return nil, fmt.Errorf("args.intervalMs: %d is outside 10..60000", *a.IntervalMs)
		}
		c.Interval = time.Duration(*a.IntervalMs) * time.Millisecond
	}
	return c, nil
}

// PreStop drains the pod through the host's network functions.
func PreStop(pod sdk.Pod, c sdk.Container) sdk.Status {
	get := func(path string) (int, []byte, error) {
		resp, err := sdk.HTTPGet(cfg.Port, path)
		if err != nil {
			return 0, nil, err
		}
		return resp.Status, resp.Body(), nil
	}
	logf := func(format string, a ...any) { sdk.Logf(sdk.LevelInfo, format, a...) }
	return Drain(cfg, get, sdk.Sleep, logf)
}

// Drain is the hook's logic, free of host calls so that it is tested natively: get sends
// a GET to the pod, sleep waits (false: the call's time is up), logf logs.
func Drain(c *Config, get func(path string) (int, []byte, error), sleep func(time.Duration) bool, logf func(string, ...any)) sdk.Status {
	if _, err := fetch(get, c.DrainPath); err != nil {
		return sdk.Errorf("drain: %v", err)
	}
	last := -1
	for polls := 1; ; polls++ {
		body, err := fetch(get, c.InflightPath)
		if errors.Is(err, sdk.ETIMEDOUT) && last > 0 {
			// The grace period ran out while the poll waited: what is known is the last count.
			return sdk.Errorf("drain: %d request(s) still in flight when the grace period ran out", last)
		}
		if err != nil {
			return sdk.Errorf("drain: %v", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(body)))
		if err != nil || n < 0 {
			return sdk.Errorf("drain: GET %s: the body %.32q is not a count of requests", c.InflightPath, body)
		}
		if n == 0 {
			logf("drained after %d poll(s) of %s", polls, c.InflightPath)
			return sdk.OK()
		}
		if n != last {
			// One line per change, not per poll: a call keeps at most 100 log lines.
			logf("%d request(s) in flight", n)
			last = n
		}
		if !sleep(c.Interval) {
			return sdk.Errorf("drain: %d request(s) still in flight when the grace period ran out", n)
		}
	}
}

// fetch GETs path and returns the body of a 2xx answer.
func fetch(get func(string) (int, []byte, error), path string) ([]byte, error) {
	status, body, err := get(path)
	if err != nil {
		return nil, err
	}
	if status < 200 || status > 299 {
		return nil, fmt.Errorf("GET %s: HTTP %d", path, status)
	}
	return body, nil
}

func main() {}
