// Command default-resources is a wasmkube mutating admission policy: a pod's containers
// (init and app) that set no requests and no limits at all get default requests and
// limits, from the args:
//
//	{"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
//
// (those values without args). A container with any request or limit is left alone: what
// it set is its owner's choice, and the API server's defaulting already copies limits to
// missing requests. Only pod CREATEs are changed; a pod's resources cannot change on UPDATE.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/mutate"
)

// Defaults are the policy's args: the requests and limits a container without any gets.
type Defaults struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// Builtin are the defaults without args.
var Builtin = Defaults{
	Requests: map[string]string{"cpu": "100m", "memory": "128Mi"},
	Limits:   map[string]string{"cpu": "500m", "memory": "256Mi"},
}

// defaults are the configured defaults, marshalled once per instance: Plan copies their
// JSON into the patch instead of marshalling maps for each container of each pod.
var defaults = Builtin.marshal()

// marshaled holds the JSON of a Defaults' parts (nil for an empty part).
type marshaled struct {
	requests, limits, both json.RawMessage
}

func (d Defaults) marshal() marshaled {
	var m marshaled
	if len(d.Requests) > 0 {
		m.requests, _ = json.Marshal(d.Requests)
	}
	if len(d.Limits) > 0 {
		m.limits, _ = json.Marshal(d.Limits)
	}
	m.both, _ = json.Marshal(d)
	return m
}

func init() {
	sdk.OnInit(configure)
	mutate.Register(Mutate)
}

// configure reads and checks the args once per instance, so that a bad quantity or a
// request above its limit fails at load rather than on every pod.
func configure() error {
	if len(sdk.Args()) == 0 {
		return nil
	}
	var d Defaults
	if err := sdk.DecodeArgs(&d); err != nil {
		return err
	}
	if err := d.Check(); err != nil {
		return err
	}
	defaults = d.marshal()
	return nil
}

// Check reports the first problem of the defaults: none at all, a quantity that does not
// parse, a request above its limit.
func (d Defaults) Check() error {
	if len(d.Requests) == 0 && len(d.Limits) == 0 {
		return errors.New(`args: give requests, limits or both, e.g. {"requests": {"cpu": "100m"}, "limits": {"cpu": "500m"}}`)
	}
	for _, part := range []struct {
		name string
		m    map[string]string
	}{{"requests", d.Requests}, {"limits", d.Limits}} {
		for _, k := range slices.Sorted(maps.Keys(part.m)) {
			if _, err := ParseQuantity(part.m[k]); err != nil {
				return fmt.Errorf("args.%s.%s: %w", part.name, k, err)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(d.Requests)) {
		l, ok := d.Limits[k]
		if !ok {
			continue
		}
		rq, _ := ParseQuantity(d.Requests[k])
		lq, _ := ParseQuantity(l)
		if rq > lq {
			return fmt.Errorf("args.requests.%s: %s is above the limit %s", k, d.Requests[k], l)
		}
	}
	return nil
}

// Mutate adds the defaults to the containers of a new pod that have no resources.
func Mutate(req sdk.Request, p *sdk.Patch) sdk.Status {
	if req.Kind() != "Pod" || req.Operation() != sdk.Create || strings.Contains(req.Resource(), "/") {
		return sdk.OK()
	}
	// Only each container's name and resources are read, by paths the host evaluates
	// (sdk.Request.Get): decoding the spec into structs inside wasm costs ten times as
	// much.
	if names := Plan(req.Get, defaults, p); len(names) > 0 {
		req.AuditAnnotation("defaulted-containers", strings.Join(names, ","))
	}
	return sdk.OK()
}

// Plan adds to p the operations that give every container of the pod (read with get)
// without requests and limits the defaults d, and returns the names of those containers.
func Plan(get func(path string) gjson.Result, d marshaled, p *sdk.Patch) []string {
	var names []string
	for _, field := range []string{"initContainers", "containers"} {
		// Each container's name and resources, in order (a multipath keeps an element
		// for every container).
		i := -1
		get("spec." + field + ".#.{name,resources}").ForEach(func(_, c gjson.Result) bool {
			i++
			res := c.Get("resources")
			if nonEmpty(res.Get("requests")) || nonEmpty(res.Get("limits")) {
				return true
			}
			base := "/spec/" + field + "/" + strconv.Itoa(i) + "/resources"
			if !res.IsObject() {
				p.Add(base, d.both)
			} else {
				// Keep what else resources holds (claims); add replaces an empty map.
				if d.requests != nil {
					p.Add(base+"/requests", d.requests)
				}
				if d.limits != nil {
					p.Add(base+"/limits", d.limits)
				}
			}
			names = append(names, c.Get("name").String())
			return true
		})
	}
	return names
}

// nonEmpty reports whether v is an object with at least one member.
func nonEmpty(v gjson.Result) bool {
	if !v.IsObject() {
		return false
	}
	found := false
	v.ForEach(func(_, _ gjson.Result) bool { found = true; return false })
	return found
}

// ParseQuantity parses a Kubernetes quantity (100m, 1.5, 128Mi, 1e3, 2G) into its value,
// precisely enough to compare a request with a limit.
func ParseQuantity(s string) (float64, error) {
	num := strings.TrimPrefix(s, "+")
	if strings.HasPrefix(num, "-") {
		return 0, fmt.Errorf("quantity %q is negative", s)
	}
	end := 0
	for end < len(num) && (num[end] >= '0' && num[end] <= '9' || num[end] == '.') {
		end++
	}
	digits, suffix := num[:end], num[end:]
	if digits == "" || digits == "." || strings.Count(digits, ".") > 1 {
		return 0, fmt.Errorf("quantity %q: want a number with an optional suffix (100m, 128Mi, 2)", s)
	}
	v, err := strconv.ParseFloat(digits, 64)
	if err != nil {
		return 0, fmt.Errorf("quantity %q: %w", s, err)
	}
	if m, ok := suffixes[suffix]; ok {
		return v * m, nil
	}
	if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		if exp, err := strconv.Atoi(suffix[1:]); err == nil {
			return v * math.Pow10(exp), nil
		}
	}
	return 0, fmt.Errorf("quantity %q: unknown suffix %q (use m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent)", s, suffix)
}

var suffixes = map[string]float64{
	"": 1, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
	"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60,
}

func main() {}
