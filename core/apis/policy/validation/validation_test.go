package validation_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/apis/policy/validation"
)

// The manifest of the API's contract (docs/api-objects.md).
const requireTeam = `
apiVersion: policy.wasmkube.io/v1alpha1
kind: WasmPolicy
metadata: {name: require-team}
spec:
  hook: admission.validate
  mode: Monitor
  module: {image: 127.0.0.1:5000/policies/require-labels:v1}
  settings: {labels: [team]}
  failurePolicy: Fail
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE]}]
    namespaceSelector: {matchLabels: {wasmkube.io/require-team: "true"}}
`

func decode(t *testing.T, y string) *policyv1alpha1.WasmPolicy {
	t.Helper()
	p := &policyv1alpha1.WasmPolicy{}
	if err := yaml.UnmarshalStrict([]byte(y), p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestContractManifestIsValid(t *testing.T) {
	p := decode(t, requireTeam)
	policyv1alpha1.SetDefaults(p)
	if errs := validation.ValidateSpec(&p.Spec, field.NewPath("spec")); len(errs) != 0 {
		t.Fatal(errs)
	}
	if p.Spec.Module.PullPolicy != policyv1alpha1.PullIfNotPresent || p.Spec.Mode != policyv1alpha1.ModeMonitor ||
		len(p.Spec.Admission.ValidationActions) != 1 || string(p.Spec.Settings.Raw) != `{"labels":["team"]}` {
		t.Fatalf("defaulted spec %+v", p.Spec)
	}
	for _, y := range []string{
		"spec: {hook: scheduler.score, module: {file: /var/lib/wasmkube/pack.wasm}, scheduler: {schedulerName: default-scheduler, weight: 2}}",
		"spec: {hook: scheduler.filter, module: {image: 'localhost:5000/p/zone@sha256:" + strings.Repeat("a", 64) + "', sha256: " + strings.Repeat("b", 64) + "}}",
		"spec: {hook: kubelet.probe, module: {image: registry.example.com/p/json-health:v2}, kubelet: {hookName: json-health, nodeSelector: {matchLabels: {disk: ssd}}, capabilities: [pod-network]}}",
		"spec: {hook: admission.mutate, module: {image: 127.0.0.1:5000/p/m:v1}, timeout: 2s, memoryLimit: 32Mi, pool: 8, admission: {rules: [{apiGroups: ['*'], apiVersions: ['*'], resources: ['pods/*'], operations: ['*']}]}}",
	} {
		p := decode(t, y)
		policyv1alpha1.SetDefaults(p)
		if errs := validation.ValidateSpec(&p.Spec, field.NewPath("spec")); len(errs) != 0 {
			t.Errorf("%s: %v", y, errs)
		}
	}
}

// One policy with every field wrong reports every field.
func TestEveryBadFieldIsNamed(t *testing.T) {
	p := decode(t, `
spec:
  hook: admission.validate
  mode: Shadow
  module: {image: "policies/require-labels:v1", file: "relative.wasm", sha256: ABC, pullPolicy: Sometimes,
           imagePullSecrets: [{name: regcred}]}
  settings: 42
  failurePolicy: Crash
  timeout: 1m
  memoryLimit: 1Ki
  pool: 0
  scheduler: {weight: 2}
  admission:
    rules: [{apiGroups: [""], apiVersions: [v1], resources: ["a/b/c"], operations: [CREATE, MERGE]}, {}]
    namespaceSelector: {matchLabels: {"bad key!": x}}
    validationActions: [Deny, Warn, Shout]
`)
	errs := validation.ValidateSpec(&p.Spec, field.NewPath("spec"))
	got := map[string]bool{}
	for _, e := range errs {
		got[e.Field] = true
	}
	for _, f := range []string{
		"spec.mode", "spec.module.image", "spec.module.file", "spec.module.sha256", "spec.module.pullPolicy",
		"spec.module.imagePullSecrets[0].namespace", "spec.settings", "spec.failurePolicy", "spec.timeout",
		"spec.memoryLimit", "spec.pool", "spec.scheduler", "spec.admission.rules[0].resources[0]",
		"spec.admission.rules[0].operations[1]", "spec.admission.rules[1].apiGroups", "spec.admission.rules[1].operations",
		"spec.admission.namespaceSelector.matchLabels", "spec.admission.validationActions[2]", "spec.admission.validationActions",
	} {
		if !got[f] {
			t.Errorf("no error for %s; got %v", f, errs)
		}
	}
}

func TestHookSections(t *testing.T) {
	for _, tt := range []struct {
		y, field string
	}{
		{"spec: {module: {file: /m.wasm}}", "spec.hook"},
		{"spec: {hook: scheduler.reserve, module: {file: /m.wasm}}", "spec.hook"},
		{"spec: {hook: admission.validate, module: {file: /m.wasm}}", "spec.admission"},
		{"spec: {hook: kubelet.preStop, module: {file: /m.wasm}}", "spec.kubelet"},
		{"spec: {hook: kubelet.preStop, module: {file: /m.wasm}, kubelet: {hookName: Not_A_Label}}", "spec.kubelet.hookName"},
		{"spec: {hook: kubelet.probe, module: {file: /m.wasm}, kubelet: {hookName: h, capabilities: [net]}}", "spec.kubelet.capabilities[0]"},
		{"spec: {hook: scheduler.filter, module: {file: /m.wasm}, scheduler: {weight: 2}}", "spec.scheduler.weight"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm}, scheduler: {weight: 101, extensionPoints: [Score, Score, Bind]}}", "spec.scheduler.weight"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm}, scheduler: {extensionPoints: [Score, Score]}}", "spec.scheduler.extensionPoints[1]"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm}, scheduler: {extensionPoints: [Bind]}}", "spec.scheduler.extensionPoints[0]"},
		{"spec: {hook: admission.mutate, module: {file: /m.wasm}, admission: {rules: [{apiGroups: [''], apiVersions: [v1], resources: [pods], operations: [CREATE]}], validationActions: [Warn]}}", "spec.admission.validationActions"},
		{"spec: {hook: scheduler.score, module: {}}", "spec.module"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm}, rollout: Canary}", "spec.rollout"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm}, revision: 0}", "spec.revision"},
		{"spec: {hook: scheduler.score, module: {file: /m.wasm, pullPolicy: Always}}", "spec.module.pullPolicy"},
		{"spec: {hook: scheduler.score, module: {image: 'r.io/p/m@sha256:abc'}}", "spec.module.image"},
		{"spec: {hook: scheduler.score, module: {file: /a/../m.wasm}}", "spec.module.file"},
	} {
		p := decode(t, tt.y)
		errs := validation.ValidateSpec(&p.Spec, field.NewPath("spec"))
		found := false
		for _, e := range errs {
			found = found || e.Field == tt.field
		}
		if !found {
			t.Errorf("%s: want an error for %s, got %v", tt.y, tt.field, errs)
		}
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for img, want := range map[string]policyv1alpha1.PullPolicy{
		"r.io/p/m":        policyv1alpha1.PullAlways,
		"r.io/p/m:latest": policyv1alpha1.PullAlways,
		"r.io/p/m:v1":     policyv1alpha1.PullIfNotPresent,
		"r.io/p/m@sha256:" + strings.Repeat("a", 64): policyv1alpha1.PullIfNotPresent,
	} {
		p := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerFilter, Module: policyv1alpha1.ModuleSource{Image: img}}}
		policyv1alpha1.SetDefaults(p)
		if p.Spec.Module.PullPolicy != want {
			t.Errorf("%s: pullPolicy %s, want %s", img, p.Spec.Module.PullPolicy, want)
		}
	}
}

func TestStatus(t *testing.T) {
	s := &policyv1alpha1.WasmPolicyStatus{ReadyComponents: 2, TargetedComponents: 1, Digest: "md5:x", ResolvedGeneration: -1, ReleasedGeneration: -1,
		Components: []policyv1alpha1.ComponentStatus{{Component: "proxy", Phase: "Running"}, {Name: "n", Component: "kubelet", Phase: policyv1alpha1.PhaseStaged}}}
	errs := validation.ValidateStatus(s, field.NewPath("status"))
	for _, e := range errs {
		if e.Field == "status.components[1].phase" {
			t.Errorf("Staged refused: %v", e)
		}
	}
	for _, f := range []string{"status.readyComponents", "status.digest", "status.resolvedGeneration", "status.releasedGeneration",
		"status.components[0].name", "status.components[0].component", "status.components[0].phase"} {
		found := false
		for _, e := range errs {
			found = found || e.Field == f
		}
		if !found {
			t.Errorf("no error for %s: %v", f, errs)
		}
	}
}

func TestReport(t *testing.T) {
	ok := &policyv1alpha1.WasmPolicyReport{Policy: "require-team",
		Status: policyv1alpha1.ComponentStatus{Name: "n1", Component: policyv1alpha1.ComponentKubelet, Phase: policyv1alpha1.PhaseActive}}
	if errs := validation.ValidateReport(ok); len(errs) != 0 {
		t.Fatalf("a good report refused: %v", errs)
	}
	bad := &policyv1alpha1.WasmPolicyReport{Status: policyv1alpha1.ComponentStatus{Component: "admission", Phase: "Running", ObservedGeneration: -1}}
	errs := validation.ValidateReport(bad)
	for _, f := range []string{"policy", "status.name", "status.component", "status.phase", "status.observedGeneration"} {
		found := false
		for _, e := range errs {
			found = found || e.Field == f
		}
		if !found {
			t.Errorf("no error for %s: %v", f, errs)
		}
	}
}

func TestDefaultRollout(t *testing.T) {
	p := &policyv1alpha1.WasmPolicy{Spec: policyv1alpha1.WasmPolicySpec{Hook: policyv1alpha1.HookSchedulerFilter, Module: policyv1alpha1.ModuleSource{File: "/m.wasm"}}}
	policyv1alpha1.SetDefaults(p)
	if p.Spec.Rollout != policyv1alpha1.RolloutProgressive {
		t.Fatalf("rollout %q, want Progressive", p.Spec.Rollout)
	}
}

// TestExampleManifests: the WasmPolicies examples/ ships are valid as written.
func TestExampleManifests(t *testing.T) {
	files, err := filepath.Glob("../../../../examples/wasmpolicy-*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("example manifests: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "kind: WasmPolicy\n") {
			continue // the RBAC roles
		}
		p := decode(t, string(raw))
		policyv1alpha1.SetDefaults(p)
		if errs := validation.ValidateSpec(&p.Spec, field.NewPath("spec")); len(errs) > 0 {
			t.Errorf("%s: %v", f, errs)
		}
	}
}
