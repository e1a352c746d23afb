package admitwasm

import (
	"strings"
	"testing"
	"time"
)

const goodConfig = `
scheduler: {profiles: [{schedulerName: default-scheduler}]}
admission:
  policies:
  - name: no-privileged
    path: ../wasm-examples/go/no-privileged/no-privileged.wasm
    failurePolicy: Ignore
    timeout: 250ms
    memoryLimit: 32Mi
    pool: 2
    args: {labels: [team]}
    rules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      resources: ["pods", "pods/status"]
      operations: ["CREATE", "UPDATE"]
    namespaceSelector: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]}
    objectSelector: {}
    validationActions: [Warn, Audit]
    capabilities: [namespaces]
  - name: second
    path: /abs/second.wasm
    rules: [{apiGroups: ["*"], apiVersions: ["*"], resources: ["*"], operations: ["*"]}]
`

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Policies[0]
	if p.Name != "no-privileged" || p.FailurePolicy != Ignore || p.Timeout.Duration != 250*time.Millisecond ||
		p.MemoryLimit.Value() != 32<<20 || p.Pool != 2 || string(p.Args) != `{"labels":["team"]}` ||
		p.NamespaceSelector.MatchExpressions[0].Values[0] != "kube-system" || len(p.Capabilities) != 1 {
		t.Fatalf("first policy: %+v", p)
	}
	// Defaults.
	d := cfg.Policies[1]
	if d.FailurePolicy != Fail || d.Timeout.Duration != 10*time.Second || d.Pool != DefaultPoolSize || len(d.ValidationActions) != 1 || d.ValidationActions[0] != Deny {
		t.Fatalf("defaults: %+v", d)
	}
	if cfg, err := ParseConfig([]byte("scheduler: {}\n")); err != nil || len(cfg.Policies) != 0 {
		t.Fatalf("no section: %v %v", cfg, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	policy := func(extra string) string {
		return "admission:\n  policies:\n  - name: p\n    path: p.wasm\n    rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\n" + extra
	}
	for _, tc := range []struct{ yaml, want string }{
		{"admission: {policy: []}", "admission.policy: unknown field (admission takes policies"},
		{policy("    failurPolicy: Fail\n"), "admission.policies[0].failurPolicy: unknown field"},
		{policy("    rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [CREATE], verbs: [x]}]\n"), "admission.policies[0].rules[0].verbs: unknown field"},
		{policy("    namespaceSelector: {matchExpression: []}\n"), "admission.policies[0].namespaceSelector.matchExpression: unknown field"},
		{policy("    failurePolicy: Sometimes\n"), `admission.policies[0].failurePolicy: "Sometimes": must be Fail or Ignore`},
		{policy("    validationActions: [Deny, Warn]\n"), "admission.policies[0].validationActions: Deny and Warn may not be used together"},
		{policy("    validationActions: [Block]\n"), `admission.policies[0].validationActions[0]: "Block": must be Deny, Warn or Audit`},
		{policy("    rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [PATCH]}]\n"), `admission.policies[0].rules[0].operations[0]: "PATCH"`},
		{policy("    rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods]}]\n"), "admission.policies[0].rules[0].operations: required"},
		{policy("    rules: []\n"), "admission.policies[0].rules: required: a policy matches nothing it does not name"},
		{policy("    timeout: 1m\n"), "admission.policies[0].timeout: 1m0s: must be between 0 and 30s"},
		{policy("    pool: lots\n"), `admission.policies[0].pool: "lots" is not an integer`},
		{policy("    capabilities: [\"apps/deployments\"]\n"), `admission.policies[0].capabilities[0]: "apps/deployments": must be a resource name`},
		{policy("    namespaceSelector: {matchExpressions: [{key: a, operator: Near}]}\n"), "admission.policies[0].namespaceSelector:"},
		{policy("  - name: p\n    path: q.wasm\n    rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [pods], operations: [CREATE]}]\n"), `admission.policies[1].name: duplicate policy "p"`},
		{"admission:\n  policies:\n  - path: x\n", "admission.policies[0].name: required"},
		{"admission:\n  policies:\n  - {name: x, path: [a]}\n", `admission.policies[0].path: ["a"] is not a string`},
		{"admission:\n  policies: {name: x}\n", "admission.policies: {\"name\":\"x\"} is not a list"},
	} {
		_, err := ParseConfig([]byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s\ngot %v\nwant %q", tc.yaml, err, tc.want)
		}
	}
}
