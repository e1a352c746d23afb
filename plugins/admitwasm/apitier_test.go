package admitwasm_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
	"github.com/wasmkube/wasmkube/plugins/wasmhost/modulespec"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy"
)

// apiPolicy is a WasmPolicy of hook on pod CREATEs with the module of testdata/wat.
func apiPolicy(t *testing.T, name string, hook policyv1alpha1.Hook, mode policyv1alpha1.Mode, wat string) *wasmpolicy.Policy {
	t.Helper()
	path := wasmbuild.WAT(t, "plugins/admitwasm/testdata/"+wat)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return &wasmpolicy.Policy{Name: name, Generation: 1, Module: modulespec.Module{Path: path, Wasm: b},
		Spec: policyv1alpha1.WasmPolicySpec{Hook: hook, Mode: mode, Admission: &policyv1alpha1.AdmissionHook{
			Rules: []policyv1alpha1.Rule{{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Operations: []string{"CREATE"}}}}}}
}

// TestMonitorRecordsAndNeverDecides: an admission WasmPolicy in Monitor runs on the
// request, and its denial, patch and warnings go to the audit annotations and the decision
// counter; the request is neither refused nor changed. The same policies in Enforce refuse
// and mutate. A broken revision keeps the one in force; a file policy's name wins.
func TestMonitorRecordsAndNeverDecides(t *testing.T) {
	reg := prometheus.NewRegistry()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(t.TempDir(), "c")})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(context.Background(), admitwasm.Options{Host: h, Registerer: reg, Logger: slog.New(slog.DiscardHandler),
		Config: []byte("admission:\n  policies:\n  - {name: file-one, path: " + wasmbuild.WAT(t, "plugins/admitwasm/testdata/second-mutator.wat") +
			", rules: [{apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]}\n")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pol.Close(context.Background()) })

	run := func() (*v1.Pod, map[string]string, error) {
		a := admitwasm.SmokeRequest()
		a.DryRun = false
		pod := a.Object.(*v1.Pod)
		pod.Labels = map[string]string{"warn-me": "yes"}
		m, v, release := pol.AcquirePlugins()
		defer release()
		for _, p := range m {
			if err := p.Admit(context.Background(), a); err != nil {
				return pod, a.AuditAnnotations, err
			}
		}
		for _, p := range v {
			if err := p.Validate(context.Background(), a); err != nil {
				return pod, a.AuditAnnotations, err
			}
		}
		return a.Object.(*v1.Pod), a.AuditAnnotations, nil
	}

	monitor := []*wasmpolicy.Policy{
		apiPolicy(t, "require-team", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeMonitor, "require-team.wat"),
		apiPolicy(t, "add-annotation", policyv1alpha1.HookAdmissionMutate, policyv1alpha1.ModeMonitor, "add-annotation.wat"),
	}
	if errs := pol.ApplyPolicies(monitor); len(errs) > 0 {
		t.Fatalf("apply: %v", errs)
	}
	pod, ann, err := run()
	if err != nil {
		t.Fatalf("Monitor refused: %v", err)
	}
	if len(pod.Annotations) != 0 {
		t.Fatalf("Monitor mutated the pod: %v", pod.Annotations)
	}
	if v := ann["require-team/monitor-verdict"]; !strings.HasPrefix(v, "deny: ") || !strings.Contains(v, "must carry label team") {
		t.Errorf("monitor-verdict %q", v)
	}
	if v := ann["require-team/monitor-warnings"]; !strings.Contains(v, "require-team saw") {
		t.Errorf("monitor-warnings %q", v)
	}
	if v := ann["add-annotation/monitor-patch"]; !strings.Contains(v, "mutated-by") || ann["add-annotation/monitor-verdict"] != "patch" {
		t.Errorf("monitor-patch %q, verdict %q", v, ann["add-annotation/monitor-verdict"])
	}
	m := wasmpolicy.NewMetrics(reg)
	if d, p := testutil.ToFloat64(m.MonitorDecisions.WithLabelValues("require-team", wasmpolicy.VerdictDeny)),
		testutil.ToFloat64(m.MonitorDecisions.WithLabelValues("add-annotation", wasmpolicy.VerdictPatch)); d != 1 || p != 1 {
		t.Errorf("decisions: deny %v, patch %v; want 1 and 1", d, p)
	}

	enforce := []*wasmpolicy.Policy{
		apiPolicy(t, "require-team", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeEnforce, "require-team.wat"),
		apiPolicy(t, "add-annotation", policyv1alpha1.HookAdmissionMutate, policyv1alpha1.ModeEnforce, "add-annotation.wat"),
	}
	if errs := pol.ApplyPolicies(enforce); len(errs) > 0 {
		t.Fatalf("apply: %v", errs)
	}
	if _, _, err := run(); err == nil || !strings.Contains(err.Error(), "admission policy require-team denied") {
		t.Fatalf("Enforce: %v", err)
	}

	// A broken revision: reported, the Enforce one stays. A file policy's name: conflict.
	broken := apiPolicy(t, "require-team", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeEnforce, "broken.wat")
	clash := apiPolicy(t, "file-one", policyv1alpha1.HookAdmissionValidate, policyv1alpha1.ModeEnforce, "require-team.wat")
	errs := pol.ApplyPolicies([]*wasmpolicy.Policy{broken, enforce[1], clash})
	var ce *wasmpolicy.ConflictError
	if errs["require-team"] == nil || !asConflict(errs["file-one"], &ce) || len(errs) != 2 {
		t.Fatalf("errors %v", errs)
	}
	if _, _, err := run(); err == nil || !strings.Contains(err.Error(), "admission policy require-team denied") {
		t.Fatalf("the last good revision must stay in force: %v", err)
	}
	if got := strings.Join(pol.InForce(), ","); got != "file-one,require-team,add-annotation" {
		t.Errorf("in force: %s (the file tier first, then the API tier in the loader's order; file-one the file's)", got)
	}
}

func asConflict(err error, target **wasmpolicy.ConflictError) bool {
	return errors.As(err, target)
}
