package apiserver_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// kubectlRunner runs the real kubectl (v1.32, default flags) against a test server.
type kubectlRunner struct {
	t   *testing.T
	srv *apiservertest.Server
	dir string
}

func newKubectl(t *testing.T, srv *apiservertest.Server) *kubectlRunner {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("kubectl is required (installed on every wasmkube machine): %v", err)
	}
	return &kubectlRunner{t: t, srv: srv, dir: t.TempDir()}
}

func (k *kubectlRunner) cmd(args ...string) *exec.Cmd {
	c := exec.Command("kubectl", append([]string{"--kubeconfig", k.srv.KubeconfigPath, "--cache-dir", filepath.Join(k.dir, "cache")}, args...)...)
	c.Env = append(os.Environ(), "HOME="+k.dir)
	return c
}

// run returns combined output and the error.
func (k *kubectlRunner) run(args ...string) (string, error) {
	out, err := k.cmd(args...).CombinedOutput()
	return string(out), err
}

// ok runs kubectl and fails the test if it fails.
func (k *kubectlRunner) ok(args ...string) string {
	k.t.Helper()
	out, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// file writes a manifest and returns its path.
func (k *kubectlRunner) file(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

func header(out string) string {
	return strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " ")
}

const podManifest = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  labels: {app: %s}
spec:
  containers:
  - name: app
    image: %s
`

func TestKubectlLifecycle(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)

	// apply: create, then configure.
	if out := k.ok("apply", "-f", k.file("web.yaml", fmt.Sprintf(podManifest, "web", "web", "busybox:1"))); !strings.Contains(out, "pod/web created") {
		t.Fatalf("apply create: %s", out)
	}
	if out := k.ok("apply", "-f", k.file("web.yaml", fmt.Sprintf(podManifest, "web", "web", "busybox:2"))); !strings.Contains(out, "pod/web configured") {
		t.Fatalf("apply configure: %s", out)
	}
	if out := k.ok("get", "pod", "web", "-o", "jsonpath={.spec.containers[0].image} {.spec.restartPolicy} {.spec.dnsPolicy}"); out != "busybox:2 Always ClusterFirst" {
		t.Fatalf("after apply: %q", out)
	}
	// create, and create again (409).
	k.ok("create", "-f", k.file("db.yaml", fmt.Sprintf(podManifest, "db", "db", "busybox")))
	if out, err := k.run("create", "-f", k.file("db.yaml", fmt.Sprintf(podManifest, "db", "db", "busybox"))); err == nil || !strings.Contains(out, "AlreadyExists") {
		t.Fatalf("second create: %v %s", err, out)
	}
	// Table columns.
	if h := header(k.ok("get", "pods")); h != "NAME READY STATUS RESTARTS AGE" {
		t.Fatalf("get pods header %q", h)
	}
	if h := header(k.ok("get", "pods", "-o", "wide")); !strings.HasPrefix(h, "NAME READY STATUS RESTARTS AGE IP NODE") {
		t.Fatalf("get pods -o wide header %q", h)
	}
	// label and field selectors.
	if out := k.ok("get", "pods", "-l", "app=db", "-o", "name"); out != "pod/db\n" {
		t.Fatalf("label selector: %q", out)
	}
	if out := k.ok("get", "pods", "--field-selector", "metadata.name=web,status.phase=Pending", "-o", "name"); out != "pod/web\n" {
		t.Fatalf("field selector: %q", out)
	}
	if out, err := k.run("get", "pods", "--field-selector", "spec.bogus=1"); err == nil || !strings.Contains(out, "field label not supported: spec.bogus") {
		t.Fatalf("unsupported field selector: %v %s", err, out)
	}
	// patch: strategic (kubectl's default), merge, json.
	k.ok("patch", "pod", "web", "-p", `{"metadata":{"labels":{"s":"1"}}}`)
	k.ok("patch", "pod", "web", "--type=merge", "-p", `{"metadata":{"labels":{"m":"2"}}}`)
	k.ok("patch", "pod", "web", "--type=json", "-p", `[{"op":"add","path":"/metadata/labels/j","value":"3"}]`)
	if out := k.ok("get", "pod", "web", "-o", "jsonpath={.metadata.labels.s}{.metadata.labels.m}{.metadata.labels.j}"); out != "123" {
		t.Fatalf("labels after patches: %q", out)
	}
	if out, err := k.run("patch", "pod", "web", "--type=json", "-p", `[{"op":"test","path":"/metadata/labels/s","value":"nope"}]`); err == nil || !strings.Contains(out, "Invalid") {
		t.Fatalf("failing json patch test op: %v %s", err, out)
	}
	// replace with the current object and with a stale resourceVersion.
	cur := k.ok("get", "pod", "web", "-o", "yaml")
	k.ok("label", "pod", "web", "bump=1")
	if out, err := k.run("replace", "-f", k.file("stale.yaml", cur)); err == nil || !strings.Contains(out, "the object has been modified") {
		t.Fatalf("replace with stale resourceVersion: %v %s", err, out)
	}
	fresh := k.ok("get", "pod", "web", "-o", "yaml")
	if out := k.ok("replace", "-f", k.file("fresh.yaml", strings.Replace(fresh, "bump: \"1\"", "bump: \"2\"", 1))); !strings.Contains(out, "pod/web replaced") {
		t.Fatalf("replace: %s", out)
	}
	if out := k.ok("get", "pod", "web", "-o", "jsonpath={.metadata.labels.bump}"); out != "2" {
		t.Fatalf("label after replace: %q", out)
	}
	// describe.
	desc := k.ok("describe", "pod", "web")
	for _, want := range []string{"Name:", "web", "Status:", "Pending", "busybox:2", "node.kubernetes.io/not-ready:NoExecute op=Exists for 300s"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("describe lacks %q:\n%s", want, desc)
		}
	}
	// deployments and scale.
	k.ok("create", "deployment", "nginx", "--image=nginx", "--replicas=2")
	k.ok("scale", "deployment", "nginx", "--replicas=5")
	if out := k.ok("get", "deploy", "nginx", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"); out != "5 2" {
		t.Fatalf("after scale: %q", out)
	}
	if out := k.ok("get", "all", "-o", "name"); !strings.Contains(out, "deployment.apps/nginx") || !strings.Contains(out, "pod/web") {
		t.Fatalf("get all: %s", out)
	}
	// api-resources lists short names.
	ar := k.ok("api-resources")
	for _, want := range []string{"po ", "deploy ", "rs ", "svc ", "ns ", "no ", "cm ", "ev ", "ep "} {
		if !strings.Contains(ar, want) {
			t.Fatalf("api-resources lacks %q:\n%s", want, ar)
		}
	}
	// delete: an unbound pod goes at once.
	if out := k.ok("delete", "pod", "db"); !strings.Contains(out, `pod "db" deleted`) {
		t.Fatalf("delete: %s", out)
	}
	if out, err := k.run("get", "pod", "db"); err == nil || !strings.Contains(out, "NotFound") {
		t.Fatalf("get after delete: %v %s", err, out)
	}
}

func TestKubectlBadManifests(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	// 422 with every field path.
	out, err := k.run("create", "-f", k.file("bad.yaml", `apiVersion: v1
kind: Pod
metadata: {name: Bad_Name}
spec:
  restartPolicy: Sometimes
  containers:
  - name: app
`))
	for _, want := range []string{"is invalid", "metadata.name", "spec.containers[0].image: Required value", "spec.restartPolicy: Unsupported value"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("invalid pod: want %q in: %v\n%s", want, err, out)
		}
	}
	// Unknown field under kubectl's Strict field validation: 400 naming the field.
	out, err = k.run("create", "-f", k.file("unknown.yaml", fmt.Sprintf(podManifest, "u", "u", "busybox")+"    bogus: 1\n"))
	if err == nil || !strings.Contains(out, `unknown field "spec.containers[0].bogus"`) {
		t.Errorf("unknown field: %v\n%s", err, out)
	}
	// Nothing was written.
	if out := k.ok("get", "pods", "-o", "name"); out != "" {
		t.Errorf("failed creates wrote objects: %q", out)
	}
	// 401 without a valid token.
	out, err = k.run("--token", "not-a-token", "get", "pods")
	if err == nil || !strings.Contains(out, "Unauthorized") {
		t.Errorf("bad token: %v\n%s", err, out)
	}
}

func TestKubectlGetWatchStreams(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("run", "first", "--image=busybox")
	cmd := k.cmd("get", "pods", "-w")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("kubectl get -w ended")
			}
			return l
		case <-time.After(30 * time.Second):
			t.Fatal("kubectl get -w printed nothing")
		}
		return ""
	}
	if h := strings.Join(strings.Fields(next()), " "); h != "NAME READY STATUS RESTARTS AGE" {
		t.Fatalf("header %q", h)
	}
	if l := next(); !strings.HasPrefix(l, "first ") {
		t.Fatalf("first row %q", l)
	}
	// A pod created now streams in while kubectl keeps running.
	k.ok("run", "second", "--image=busybox")
	for {
		l := next()
		if strings.HasPrefix(l, "second ") {
			if !strings.Contains(l, "Pending") {
				t.Fatalf("streamed row %q", l)
			}
			break
		}
	}
}

func TestKubectlNodeCredentialForbidden(t *testing.T) {
	srv := apiservertest.Start(t)
	k := newKubectl(t, srv)
	k.ok("create", "-f", k.file("nodes.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: n2}\n"))
	tok := srv.NodeConfig(t, "n1").BearerToken
	if out := k.ok("--token", tok, "label", "node", "n1", "zone=a"); !strings.Contains(out, "node/n1 labeled") {
		t.Fatalf("node labels itself: %s", out)
	}
	out, err := k.run("--token", tok, "label", "node", "n2", "zone=a")
	if err == nil || !strings.Contains(out, "Forbidden") || !strings.Contains(out, `node "n1" may only modify its own Node object`) {
		t.Fatalf("node labels another node: %v\n%s", err, out)
	}
	out, err = k.run("--token", tok, "run", "x", "--image=busybox")
	if err == nil || !strings.Contains(out, "Forbidden") {
		t.Fatalf("node creates a pod: %v\n%s", err, out)
	}
}
