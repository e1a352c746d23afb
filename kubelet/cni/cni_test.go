package cni

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestConfList(t *testing.T) {
	data, err := ConfList(Config{Bridge: "wasmkube0", PodCIDR: "10.42.0.7/24", Dir: "/var/lib/k/cni"})
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Plugins []map[string]any `json:"plugins"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	br := list.Plugins[0]
	if br["type"] != "bridge" || br["bridge"] != "wasmkube0" || br["ipMasq"] != false || br["hairpinMode"] != true || br["isGateway"] != true {
		t.Errorf("bridge plugin %v", br)
	}
	ipam := br["ipam"].(map[string]any)
	if ipam["dataDir"] != "/var/lib/k/cni/ipam" || !strings.Contains(string(data), `"subnet": "10.42.0.0/24"`) {
		t.Errorf("ipam %v", ipam)
	}
	if list.Plugins[1]["type"] != "loopback" {
		t.Errorf("second plugin %v", list.Plugins[1])
	}
	for _, bad := range []Config{
		{Bridge: "", PodCIDR: "10.0.0.0/24"},
		{Bridge: "a-very-long-bridge-name", PodCIDR: "10.0.0.0/24"},
		{Bridge: "b", PodCIDR: "10.0.0.0"},
		{Bridge: "b", PodCIDR: "10.0.0.0/31"},
	} {
		if _, err := ConfList(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
