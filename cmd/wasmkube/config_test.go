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
	if err != nil || cs.nodeMonitorGracePeriod != 40*time.Second || cs.tolerationSeconds != 300 {
		t.Fatalf("defaults: %+v %v", cs, err)
	}
	cs, err = readControllerSettings(writeConfig(t, "controller:\n  nodeMonitorGracePeriod: 1m\n  defaultTolerationSeconds: 30\nscheduler: {}\n"))
	if err != nil || cs.nodeMonitorGracePeriod != time.Minute || cs.tolerationSeconds != 30 {
		t.Fatalf("from the file: %+v %v", cs, err)
	}
	for content, want := range map[string]string{
		"controller:\n  defaultTolerationSecond: 30\n": "controller.defaultTolerationSecond: unknown key",
		"controler:\n  defaultTolerationSeconds: 30\n": "controler: unknown key",
		"controller:\n  nodeMonitorGracePeriod: 40\n":  "controller.nodeMonitorGracePeriod: cannot use a number",
		"server:\n  defaultTolerationSeconds: 30\n":    "moved to controller.defaultTolerationSeconds",
	} {
		p := writeConfig(t, content)
		if _, err := readControllerSettings(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v, want the file and %q", content, err, want)
		}
	}
}
