package goexamples_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/config"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/nodewasm/nodewasmtest"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// hookExamples are the kubelet hook examples: folder, the plugin name examples/wasmkube.yaml
// declares, and the hook their pod.yaml asks it for.
var hookExamples = []struct {
	folder, plugin, kind, container string
}{
	{"json-health-probe", "json-health", "readiness", "web"},
	{"threshold-liveness", "threshold-liveness", "liveness", "web"},
	{"drain-prestop", "drain", "prestop", "web"},
}

// examples/wasmkube.yaml declares each hook example under its name, with args its module
// accepts (the kubelet loads the plugin: init and smoke call pass).
func TestExampleClusterHookPlugins(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "examples", "wasmkube.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range hookExamples {
		spec := cfg.Plugin(ex.plugin)
		if spec == nil {
			t.Errorf("examples/wasmkube.yaml declares no hook plugin %s", ex.plugin)
			continue
		}
		if want := "../wasm-examples/go/" + ex.folder + "/" + ex.folder + ".wasm"; spec.Path != want {
			t.Errorf("hook plugin %s: path %s, want %s", ex.plugin, spec.Path, want)
		}
		s := *spec
		s.Path = wasmbuild.Go(t, "wasm-examples/go/"+ex.folder)
		if _, err := nodewasmtest.LoadSpec(t, s); err != nil {
			t.Errorf("hook plugin %s as examples/wasmkube.yaml declares it: %v", ex.plugin, err)
		}
	}
}

// Each hook example's pod.yaml names its plugin in a hooks.wasmkube.io annotation, keeps the
// ordinary handler that Kubernetes requires and other clusters run, and passes real
// kubectl and the API server with the example cluster's admission policies (a server-side
// dry run): what `kubectl apply` does on make run's cluster.
func TestHookExamplePods(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is required (installed on every wasmkube machine): %v", err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, []byte(exampleConfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "wasm-cache")})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: h, ConfigFile: file})
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(pol))
	done := make(chan struct{})
	go func() { pol.Run(ctx, srv.Client); close(done) }()
	defer func() {
		cancel()
		<-done
		srv.Stop()
		pol.Close(context.Background())
	}()

	for _, ex := range hookExamples {
		manifest := filepath.Join(wasmbuild.Root(), "wasm-examples", "go", ex.folder, "pod.yaml")
		b, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		var pod v1.Pod
		if err := yaml.UnmarshalStrict(b, &pod); err != nil {
			t.Fatalf("%s: %v", ex.folder, err)
		}
		if got := pod.Annotations["hooks.wasmkube.io/"+ex.kind+"."+ex.container]; got != ex.plugin {
			t.Errorf("%s: annotation for the %s hook of %s names %q, want %q", ex.folder, ex.kind, ex.container, got, ex.plugin)
		}
		var handler bool
		for _, c := range pod.Spec.Containers {
			if c.Name != ex.container {
				continue
			}
			switch ex.kind {
			case "readiness":
				handler = c.ReadinessProbe != nil
			case "liveness":
				handler = c.LivenessProbe != nil
			case "prestop":
				handler = c.Lifecycle != nil && c.Lifecycle.PreStop != nil
			}
		}
		if !handler {
			t.Errorf("%s: container %s has no ordinary %s handler", ex.folder, ex.container, ex.kind)
		}
		cmd := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "--cache-dir", filepath.Join(dir, "kcache"),
			"apply", "--dry-run=server", "-f", manifest)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "created (server dry run)") {
			t.Errorf("%s: kubectl apply --dry-run=server: %v\n%s", ex.folder, err, out)
		}
	}
}
