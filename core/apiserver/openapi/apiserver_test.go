package openapi_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestKubectlAgainstAPIServer runs real kubectl with its default flags against the real API
// server (embedded etcd), which serves this package's handler and calls the defaults,
// validation and printers packages.
func TestKubectlAgainstAPIServer(t *testing.T) {
	kubectlBin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is required for this test (installed on every wasmkube machine): %v", err)
	}
	srv := apiservertest.Start(t)
	dir := t.TempDir()
	kubectl := func(args ...string) (string, error) {
		cmd := exec.Command(kubectlBin, append([]string{"--kubeconfig", srv.KubeconfigPath, "--cache-dir", filepath.Join(dir, "cache"), "-n", "default"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+dir)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const pod = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: app
    image: nginx:%s
    ports: [{containerPort: 80, name: http}]
`
	out, err := kubectl("apply", "-f", file("web.yaml", fmt.Sprintf(pod, "1.27")))
	if err != nil || !strings.Contains(out, "pod/web created") {
		t.Fatalf("kubectl apply (create): %v\n%s", err, out)
	}
	out, err = kubectl("apply", "-f", file("web.yaml", fmt.Sprintf(pod, "1.28")))
	if err != nil || !strings.Contains(out, "pod/web configured") {
		t.Fatalf("kubectl apply (configure): %v\n%s", err, out)
	}
	out, err = kubectl("get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.spec.restartPolicy} {.spec.containers[0].imagePullPolicy} {.spec.containers[0].ports[0].protocol} {.spec.schedulerName}")
	if err != nil || out != "nginx:1.28 Always IfNotPresent TCP default-scheduler" {
		t.Errorf("image and defaults after apply: %q (%v)", out, err)
	}

	out, err = kubectl("get", "pods")
	if err != nil || !strings.HasPrefix(out, "NAME") || !strings.Contains(strings.Fields(strings.SplitN(out, "\n", 2)[0])[1], "READY") {
		t.Errorf("kubectl get pods: %v\n%s", err, out)
	}
	if fields := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(fields, " ") != "NAME READY STATUS RESTARTS AGE" {
		t.Errorf("kubectl get pods header = %q", fields)
	}
	out, err = kubectl("get", "pods", "-o", "wide")
	if fields := strings.Fields(strings.SplitN(out, "\n", 2)[0]); err != nil || strings.Join(fields, " ") != "NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES" {
		t.Errorf("kubectl get pods -o wide header = %q (%v)", fields, err)
	}

	out, err = kubectl("explain", "pod.spec")
	if err != nil || !strings.Contains(out, "containers\t<[]Container> -required-") {
		t.Errorf("kubectl explain pod.spec: %v\n%s", err, out)
	}

	// Unknown field: kubectl leaves it to the server, which refuses it under Strict.
	out, err = kubectl("create", "-f", file("strict.yaml", strings.Replace(fmt.Sprintf(pod, "1.27"), "name: web", "name: strict", 1)+"    bogusField: 1\n"))
	if err == nil || !strings.Contains(out, "Error from server") || !strings.Contains(out, `unknown field "spec.containers[0].bogusField"`) {
		t.Errorf("kubectl create with an unknown field: %v\n%s", err, out)
	}

	// Invalid object: 422 with every field error.
	out, err = kubectl("create", "-f", file("bad.yaml", `apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  restartPolicy: Sometimes
  containers:
  - name: App
    ports: [{containerPort: 70000}]
`))
	for _, want := range []string{"is invalid", "spec.containers[0].name: Invalid value: \"App\"", "spec.containers[0].image: Required value",
		"spec.containers[0].ports[0].containerPort: Invalid value: 70000", "spec.restartPolicy: Unsupported value: \"Sometimes\""} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("kubectl create of an invalid pod lacks %q: %v\n%s", want, err, out)
		}
	}

	// Pod updates other than the image are forbidden.
	out, err = kubectl("patch", "pod", "web", "--type=merge", "-p", `{"spec":{"containers":[{"name":"app","image":"nginx:1.28","workingDir":"/tmp"}]}}`)
	if err == nil || !strings.Contains(out, "pod updates may not change fields other than") {
		t.Errorf("forbidden pod update: %v\n%s", err, out)
	}
}
