// Package goexamples_test checks what the Go examples share beyond their own packages: the
// kubelet hook examples' pod.yaml files are what real kubectl applies unchanged.
package goexamples_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
)

// Each hook example's pod.yaml passes real kubectl and the API server (a server-side dry
// run), names its plugin in a hooks.wasmkube.io annotation, and keeps the ordinary handler
// that Kubernetes requires and other clusters run.
func TestHookExamplePods(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is required (installed on every wasmkube machine): %v", err)
	}
	srv := apiservertest.Start(t)
	home := t.TempDir()
	for _, tt := range []struct {
		example, kind, container, plugin string
	}{
		{"json-health-probe", "readiness", "web", "json-health"},
		{"threshold-liveness", "liveness", "web", "threshold-liveness"},
		{"drain-prestop", "prestop", "web", "drain"},
	} {
		file := filepath.Join(wasmbuild.Root(), "wasm-examples", "go", tt.example, "pod.yaml")
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var pod v1.Pod
		if err := yaml.UnmarshalStrict(b, &pod); err != nil {
			t.Fatalf("%s: %v", tt.example, err)
		}
		if got := pod.Annotations["hooks.wasmkube.io/"+tt.kind+"."+tt.container]; got != tt.plugin {
			t.Errorf("%s: annotation for the %s hook of %s names %q, want %q", tt.example, tt.kind, tt.container, got, tt.plugin)
		}
		var handler bool
		for _, c := range pod.Spec.Containers {
			if c.Name != tt.container {
				continue
			}
			switch tt.kind {
			case "readiness":
				handler = c.ReadinessProbe != nil
			case "liveness":
				handler = c.LivenessProbe != nil
			case "prestop":
				handler = c.Lifecycle != nil && c.Lifecycle.PreStop != nil
			}
		}
		if !handler {
			t.Errorf("%s: container %s has no ordinary %s handler", tt.example, tt.container, tt.kind)
		}
		cmd := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "--cache-dir", filepath.Join(home, "cache"),
			"apply", "--dry-run=server", "-f", file)
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "(server dry run)") {
			t.Errorf("%s: kubectl apply --dry-run=server: %v\n%s", tt.example, err, out)
		}
	}
}
