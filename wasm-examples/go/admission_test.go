// Package goexamples_test runs the example cluster's admission policies (the admission:
// section of examples/wasmkube.yaml, which `make run` starts with) in a real API server
// and checks, with the real kubectl, what the README's users see.
package goexamples_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/plugins/admitwasm"
	"github.com/wasmkube/wasmkube/plugins/wasmbuild"
	"github.com/wasmkube/wasmkube/plugins/wasmhost"
)

// exampleConfig is examples/wasmkube.yaml with each admission policy's path replaced by
// the module built for this test.
func exampleConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(wasmbuild.Root(), "examples", "wasmkube.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Only the admission section's modules: the scheduler's are not loaded here.
	head, section, ok := strings.Cut(string(b), "\nadmission:")
	if !ok {
		t.Fatal("examples/wasmkube.yaml has no admission: section")
	}
	return head + "\nadmission:" + regexp.MustCompile(`\.\./wasm-examples/go/[a-z-]+/[a-z-]+\.wasm`).ReplaceAllStringFunc(section, func(p string) string {
		return wasmbuild.Go(t, strings.TrimPrefix(filepath.Dir(p), "../"))
	})
}

func TestExampleClusterAdmission(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatal("kubectl not found (install it: scripts/deps.sh)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "wasmkube.yaml")
	if err := os.WriteFile(file, []byte(exampleConfig(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := wasmhost.New(wasmhost.Options{Extensions: []wasmhost.Extension{admitwasm.Extension}, CacheDir: filepath.Join(dir, "wasm-cache"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := admitwasm.New(ctx, admitwasm.Options{Host: h, ConfigFile: file, Logger: log})
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

	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command("kubectl", append([]string{"--kubeconfig", srv.KubeconfigPath, "--cache-dir", filepath.Join(dir, "kcache")}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	fails := func(want string, args ...string) {
		t.Helper()
		out, err := kubectl(args...)
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("kubectl %s: err %v, output\n%s\nwant a failure with %q", strings.Join(args, " "), err, out, want)
		}
	}
	manifest := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// require-labels, only where the namespace asks for it; nothing is stored.
	run("create", "namespace", "teams")
	run("label", "namespace", "teams", "wasmkube.io/require-team=true")
	fails(`admission policy require-labels denied the request: pods "web" must carry label team`, "run", "web", "-n", "teams", "--image=busybox:1.36")
	fails(`admission policy require-labels denied the request`, "run", "web", "-n", "teams", "--image=busybox:1.36", "--dry-run=server")
	fails(`NotFound`, "get", "pod", "web", "-n", "teams")
	run("run", "web", "-n", "teams", "--image=busybox:1.36", "--labels=team=shop")
	run("run", "web", "--image=busybox:1.36") // default does not ask for the label

	// disallow-latest-tag warns (validationActions [Warn]) and admits; default-resources fills
	// in requests and limits.
	out := run("run", "latest", "--image=busybox:latest")
	if !strings.Contains(out, "Warning: admission policy disallow-latest-tag: image busybox:latest has no tag or the tag latest: pin a version or a digest") {
		t.Errorf("kubectl run with :latest printed\n%s\nwant the policy's warning", out)
	}
	res := run("get", "pod", "latest", "-o", "jsonpath={.spec.containers[0].resources}")
	for _, want := range []string{`"requests":{"cpu":"100m","memory":"128Mi"}`, `"limits":{"cpu":"500m","memory":"256Mi"}`} {
		if !strings.Contains(res, want) {
			t.Errorf("resources of the pod without any: %s, want %s", res, want)
		}
	}
	own := manifest("own.yaml", `apiVersion: v1
kind: Pod
metadata: {name: own}
spec:
  containers:
  - {name: app, image: "busybox:1.36", resources: {requests: {cpu: 250m}}}
`)
	run("apply", "-f", own)
	if res := run("get", "pod", "own", "-o", "jsonpath={.spec.containers[0].resources}"); strings.Contains(res, "128Mi") || strings.Contains(res, "limits") {
		t.Errorf("a container with its own request got defaults: %s", res)
	}

	// no-privileged refuses with the field (422), under --dry-run=server too, but not in
	// kube-system.
	privileged := `apiVersion: v1
kind: Pod
metadata: {name: root, namespace: NS}
spec:
  containers:
  - {name: app, image: "busybox:1.36", securityContext: {privileged: true}}
`
	p := manifest("root.yaml", strings.Replace(privileged, "NS", "default", 1))
	fails(`The Pod "root" is invalid: spec.containers[0].securityContext.privileged: admission policy no-privileged denied the request: container app may not be privileged`, "apply", "-f", p)
	fails("is invalid", "apply", "-f", p, "--dry-run=server")
	fails("NotFound", "get", "pod", "root")
	// Several violations: a 422 with one cause per field, each with the policy's name.
	several := manifest("several.yaml", strings.Replace(strings.Replace(privileged, "NS", "default", 1), "spec:\n", "spec:\n  hostNetwork: true\n", 1))
	out, err = kubectl("apply", "-f", several)
	for _, cause := range []string{
		"* spec.hostNetwork: admission policy no-privileged denied the request: the node's network is not allowed",
		"* spec.containers[0].securityContext.privileged: admission policy no-privileged denied the request: container app may not be privileged",
	} {
		if err == nil || !strings.Contains(out, cause) {
			t.Errorf("a pod with two violations: err %v, output\n%s\nwant the cause %q", err, out, cause)
		}
	}
	run("apply", "-f", manifest("root-system.yaml", strings.Replace(privileged, "NS", "kube-system", 1)))
}
