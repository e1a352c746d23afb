package main

import (
	"strings"
	"testing"
	"time"
)

// TestReadControllerSettings: the controller: section of `up`, `server` and
// `controller-manager` is read strictly, with the defaults when a key is absent.
func TestReadControllerSettings(t *testing.T) {
	cs, err := readControllerSettings("")
	if err != nil || cs.nodeMonitorGracePeriod != 40*time.Second || cs.tolerationSeconds != 300 ||
		cs.clusterCIDR != "10.42.0.0/16" || cs.nodeCIDRMaskSize != 24 {
		t.Fatalf("defaults: %+v %v", cs, err)
	}
	cs, err = readControllerSettings(writeConfig(t, "controller:\n  nodeMonitorGracePeriod: 1m\n  defaultTolerationSeconds: 30\n"+
		"  clusterCIDR: 10.64.0.0/16\n  nodeCIDRMaskSize: 26\nscheduler: {}\n"))
	if err != nil || cs.nodeMonitorGracePeriod != time.Minute || cs.tolerationSeconds != 30 ||
		cs.clusterCIDR != "10.64.0.0/16" || cs.nodeCIDRMaskSize != 26 {
		t.Fatalf("from the file: %+v %v", cs, err)
	}
	for content, want := range map[string]string{
		"controller:\n  defaultTolerationSecond: 30\n": "controller.defaultTolerationSecond: unknown key",
		"controler:\n  defaultTolerationSeconds: 30\n": "controler: unknown key",
		"controller:\n  nodeMonitorGracePeriod: 40\n":  "controller.nodeMonitorGracePeriod: cannot use a number",
		"server:\n  defaultTolerationSeconds: 30\n":    "moved to controller.defaultTolerationSeconds",
		"controller:\n  clusterCIDR: 10.64.0.1/16\n":   "controller.clusterCIDR/nodeCIDRMaskSize: cluster CIDR \"10.64.0.1/16\": host bits set",
		"controller:\n  nodeCIDRMaskSize: 16\n":        "must be longer than the cluster CIDR's /16",
	} {
		p := writeConfig(t, content)
		if _, err := readControllerSettings(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v, want the file and %q", content, err, want)
		}
	}
}

// TestReadNetworkBackend: network.backend defaults to vxlan and names the file when wrong.
func TestReadNetworkBackend(t *testing.T) {
	if b, err := readNetworkBackend(""); err != nil || b != "vxlan" {
		t.Fatalf("default: %q %v", b, err)
	}
	if b, err := readNetworkBackend(writeConfig(t, "network:\n  backend: host-gw\n")); err != nil || b != "host-gw" {
		t.Fatalf("from the file: %q %v", b, err)
	}
	p := writeConfig(t, "network:\n  backend: udp\n")
	if _, err := readNetworkBackend(p); err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "network.backend") {
		t.Fatalf("bad backend: %v, want the file and the key", err)
	}
	if _, err := readNetworkBackend(writeConfig(t, "network:\n  backnd: vxlan\n")); err == nil || !strings.Contains(err.Error(), "network.backnd: unknown key") {
		t.Fatalf("unknown key: %v", err)
	}
}
