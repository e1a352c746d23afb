package kubelet_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestPodAndServiceProxy: the API server's pods/proxy and services/proxy reach a real pod
// (busybox httpd on the test's bridge): through kubectl proxy at
// /api/v1/namespaces/default/services/web:80/proxy/ and .../pods/web-0:8080/proxy/, by
// the service port's name, and with kubectl get --raw; a Service without endpoints is 503;
// a user without the right is refused, naming pods/proxy or services/proxy.
func TestPodAndServiceProxy(t *testing.T) {
	srv := apiservertest.Start(t)
	n := servicesNode(t, srv, "node-px")
	ctx := context.Background()
	web := webPod("web-0", 0)
	web.Spec.NodeName = n.name
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svcs := srv.Client.CoreV1().Services("default")
	if _, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "none"}, Ports: []v1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, srv.Client, "default", "web-0", "ready", podReady)

	// kubectl proxy, as dashboards are reached.
	cmd := exec.Command("kubectl", "--kubeconfig", srv.KubeconfigPath, "proxy", "--port", "56450")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	get := func(path string) (int, string) {
		t.Helper()
		var last error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get("http://127.0.0.1:56450" + path)
			if err != nil {
				last = err // kubectl proxy not listening yet
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The slice may lag the pod's readiness by a moment.
			if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(path, "/web") && !strings.Contains(path, "web:81") {
				last = nil
				continue
			}
			return resp.StatusCode, string(b)
		}
		t.Fatalf("GET %s: %v", path, last)
		return 0, ""
	}
	for _, path := range []string{
		"/api/v1/namespaces/default/services/web:80/proxy/",
		"/api/v1/namespaces/default/services/web:http/proxy/index.html",
		"/api/v1/namespaces/default/services/http:web:80/proxy/",
		"/api/v1/namespaces/default/pods/web-0:8080/proxy/",
		"/api/v1/namespaces/default/pods/web-0:8080/proxy/index.html?x=1",
	} {
		if code, body := get(path); code != http.StatusOK || strings.TrimSpace(body) != "web-0" {
			t.Errorf("GET %s: %d %q", path, code, body)
		}
	}
	if code, body := get("/api/v1/namespaces/default/pods/web-0:8080/proxy/nope"); code != http.StatusNotFound {
		t.Errorf("the pod's own 404: %d %q", code, body)
	}
	if code, body := get("/api/v1/namespaces/default/services/empty:80/proxy/"); code != http.StatusServiceUnavailable ||
		!strings.Contains(body, "no endpoints available") {
		t.Errorf("a service without endpoints: %d %q", code, body)
	}
	if code, _ := get("/api/v1/namespaces/default/services/web:81/proxy/"); code != http.StatusServiceUnavailable {
		t.Errorf("a port the service lacks: %d", code)
	}
	if out := kubectl(t, srv, "get", "--raw", "/api/v1/namespaces/default/services/web:80/proxy/"); strings.TrimSpace(out) != "web-0" {
		t.Errorf("kubectl get --raw: %q", out)
	}
	for _, res := range []string{"services/web:80", "pods/web-0:8080"} {
		_, stderr, code := kubectlRun(t, srv, "", nil, "get", "--raw", "/api/v1/namespaces/default/"+res+"/proxy/", "--as", "alice")
		kind, _, _ := strings.Cut(res, "/")
		if code == 0 || !strings.Contains(stderr, `cannot get resource "`+kind+`/proxy"`) {
			t.Errorf("%s without the right: exit %d: %s", res, code, stderr)
		}
	}
}
