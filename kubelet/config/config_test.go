package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/kubelet/config"
)

func TestParseTheKubeletSection(t *testing.T) {
	cfg, err := config.Parse([]byte(`
scheduler:
  profiles: [{schedulerName: default-scheduler}]
kubelet:
  hookPlugins:
  - name: json-health
    path: ../wasm-examples/go/json-health-probe/json-health-probe.wasm
    timeout: 1s
    memoryLimit: 32Mi
    failurePolicy: Ignore
    args: {"port": 8080, "path": "/health", "field": "status", "value": "ok"}
  - name: drain
    path: drain.wasm
  selectors:
  - plugin: drain
    kind: prestop
    container: web
    namespaceSelector: {matchLabels: {team: a}}
    podSelector: {matchExpressions: [{key: app, operator: In, values: [web]}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Plugin("json-health")
	if p == nil || p.Timeout.Duration != time.Second || p.MemoryLimit.Value() != 32<<20 || p.FailurePolicy != config.Ignore ||
		string(p.Args) != `{"field":"status","path":"/health","port":8080,"value":"ok"}` {
		t.Fatalf("json-health: %+v (args %s)", p, p.Args)
	}
	if d := cfg.Plugin("drain"); d == nil || d.FailurePolicy != config.Fail || d.Args != nil {
		t.Fatalf("drain defaults: %+v", d)
	}
	if len(cfg.Selectors) != 1 || cfg.Selectors[0].PodSelector == nil {
		t.Fatalf("selectors: %+v", cfg.Selectors)
	}
	for _, empty := range []string{"", "scheduler: {}\n", "kubelet:\n", "kubelet: {}\n"} {
		if cfg, err := config.Parse([]byte(empty)); err != nil || len(cfg.HookPlugins) != 0 {
			t.Errorf("%q: %+v %v", empty, cfg, err)
		}
	}
}

func TestParseRefusesWithTheFieldPath(t *testing.T) {
	for _, tt := range []struct{ yaml, want string }{
		{"kubelet: {hookPlugin: []}", `kubelet: unknown field "hookPlugin"`},
		{"kubelet:\n  hookPlugins:\n  - {name: a, path: a.wasm}\n  - {name: b, path: b.wasm, timout: 1s}", `kubelet.hookPlugins[1]: unknown field "timout"`},
		{"kubelet:\n  hookPlugins: [{path: a.wasm}]", "kubelet.hookPlugins[0].name: required"},
		{"kubelet:\n  hookPlugins: [{name: A_b, path: a.wasm}]", "kubelet.hookPlugins[0].name"},
		{"kubelet:\n  hookPlugins: [{name: a}]", "kubelet.hookPlugins[0].path: required"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm}, {name: a, path: b.wasm}]", `kubelet.hookPlugins[1].name: duplicate plugin "a"`},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm, failurePolicy: Sometimes}]", "kubelet.hookPlugins[0].failurePolicy"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm, timeout: -1s}]", "kubelet.hookPlugins[0].timeout"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm, timeout: soon}]", "kubelet.hookPlugins[0]"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm, pool: many}]", "kubelet.hookPlugins[0].pool: cannot use"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm}]\n  selectors: [{plugin: b, kind: readiness}]", `kubelet.selectors[0].plugin: "b" is not declared`},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm}]\n  selectors: [{plugin: a, kind: Readiness}]", "kubelet.selectors[0].kind"},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm}]\n  selectors: [{plugin: a, kind: readiness, podSelector: {matchLabel: {}}}]", `kubelet.selectors[0]: unknown field "matchLabel"`},
		{"kubelet:\n  hookPlugins: [{name: a, path: a.wasm}]\n  selectors: [{plugin: a, kind: readiness, podSelector: {matchExpressions: [{key: k, operator: Near}]}}]", "kubelet.selectors[0].podSelector"},
	} {
		_, err := config.Parse([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s:\n  got %v\n  want %q", tt.yaml, err, tt.want)
		}
	}
}
