// Command zone-filter is a wasmkube Filter plugin that admits only nodes in allowed zones:
// the node's topology.kubernetes.io/zone label must be in the args' list
// ({"zones": ["zone-1"]}); a pod's wasmkube.io/zone annotation (one zone or a
// comma-separated list) overrides the list for that pod.
package main

import (
	"errors"
	"strings"

	sdk "github.com/wasmkube/wasmkube/sdk/go"
	"github.com/wasmkube/wasmkube/sdk/go/filter"
)

const (
	zoneLabel      = "topology.kubernetes.io/zone"
	zoneAnnotation = "wasmkube.io/zone"
)

// Args are the plugin's args.
type Args struct {
	Zones []string `json:"zones"`
}

var allowed map[string]bool

func init() {
	sdk.OnInit(configure)
	filter.Register(Filter)
}

// configure reads the args once per instance; no zones is a configuration error.
func configure() error {
	var a Args
	if err := sdk.DecodeArgs(&a); err != nil {
		return err
	}
	if len(a.Zones) == 0 {
		return errors.New(`args.zones: at least one zone is required, e.g. {"zones": ["zone-1"]}`)
	}
	allowed = ZoneSet(a.Zones)
	return nil
}

// Filter admits the node when its zone is allowed for the pod.
func Filter(pod sdk.Pod, node sdk.Node) sdk.Status {
	zones := allowed
	if v, ok := pod.Annotation(zoneAnnotation); ok {
		zones = ZoneSet(strings.Split(v, ","))
	}
	zone, ok := node.LookupLabel(zoneLabel)
	return Decide(zones, zone, ok)
}

// ZoneSet builds a set from zone names, trimming blanks.
func ZoneSet(zones []string) map[string]bool {
	s := make(map[string]bool, len(zones))
	for _, z := range zones {
		if z = strings.TrimSpace(z); z != "" {
			s[z] = true
		}
	}
	return s
}

// Decide is the verdict for a node in zone (hasZone false: the node has no zone label).
func Decide(allowed map[string]bool, zone string, hasZone bool) sdk.Status {
	if !hasZone {
		return sdk.Status{Code: sdk.CodeUnschedulableAndUnresolvable, Reason: "node has no " + zoneLabel + " label"}
	}
	if !allowed[zone] {
		return sdk.Status{Code: sdk.CodeUnschedulableAndUnresolvable, Reason: "node's zone " + zone + " is not allowed"}
	}
	return sdk.OK()
}

func main() {}
