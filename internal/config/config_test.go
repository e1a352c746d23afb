package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	f, js, err := Parse([]byte(`
server:
  dataDir: /var/lib/wasmkube
  listen: 0.0.0.0:6443
  etcdEndpoints: [http://a:2379]
  logLevel: debug
controller:
  nodeMonitorGracePeriod: 1m
  defaultTolerationSeconds: 60
scheduler: {profiles: [{schedulerName: s}]}
admission: {policies: []}
kubelet: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Server.DataDir != "/var/lib/wasmkube" || f.Server.EtcdEndpoints[0] != "http://a:2379" || *f.Controller.DefaultTolerationSeconds != 60 {
		t.Errorf("decoded %+v %+v", f.Server, f.Controller)
	}
	if !strings.Contains(string(f.Scheduler), "schedulerName") || !strings.Contains(string(js), `"nodeMonitorGracePeriod":"1m"`) {
		t.Errorf("sections not kept: scheduler %s, json %s", f.Scheduler, js)
	}
	for _, empty := range []string{"", "# nothing\n", "null"} {
		if _, _, err := Parse([]byte(empty)); err != nil {
			t.Errorf("Parse(%q): %v", empty, err)
		}
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	for _, c := range []struct{ file, key, msg string }{
		{"server:\n  listn: x\n", "server.listn", "unknown key (known here: dataDir, listen"},
		{"controller:\n  nodeMonitorGracePerod: 1m\n", "controller.nodeMonitorGracePerod", "unknown key"},
		{"serer: {}\n", "serer", "unknown key (known here: server, controller, scheduler"},
		{"server:\n  listen: 5\n", "server.listen", "cannot use a number here: want a string"},
		{"server:\n  etcdEndpoints: http://a:2379\n", "server.etcdEndpoints", "want a list"},
		{"controller:\n  defaultTolerationSeconds: soon\n", "controller.defaultTolerationSeconds", "want an integer"},
		{"controller:\n  defaultTolerationSeconds: -1\n", "controller.defaultTolerationSeconds", "must not be negative"},
		{"controller:\n  nodeMonitorGracePeriod: 40\n", "controller.nodeMonitorGracePeriod", "want a duration such as 40s"},
		{"controller:\n  nodeMonitorGracePeriod: forty\n", "controller.nodeMonitorGracePeriod", "not a positive duration"},
		{"server:\n  defaultTolerationSeconds: 30\n", "server.defaultTolerationSeconds", "moved to controller.defaultTolerationSeconds"},
		{"server: 3\n", "server", "want a mapping"},
		{"- a\n", "", "must be a mapping of sections"},
		{"server: [\n", "", "invalid YAML"},
	} {
		_, _, err := Parse([]byte(c.file))
		var ce *Error
		if !errors.As(err, &ce) || ce.Key != c.key || !strings.Contains(ce.Msg, c.msg) {
			t.Errorf("Parse(%q) = %v, want key %q and %q", c.file, err, c.key, c.msg)
		}
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "wasmkube.yaml")
	if err := os.WriteFile(p, []byte("server:\n  lsten: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), "config "+p+": server.lsten: unknown key") {
		t.Errorf("Load: %v, want the file and the key", err)
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}
