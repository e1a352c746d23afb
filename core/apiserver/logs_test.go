package apiserver_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestPodLogsProxyToKubelet runs a kubelet-shaped HTTPS server on loopback that checks
// the API server's bearer token with a TokenReview (as the real kubelet does) and serves
// /containerLogs; kubectl logs and client-go reach it through pods/log.
func TestPodLogsProxyToKubelet(t *testing.T) {
	srv := apiservertest.Start(t)
	kubeletClient := mustClient(t, srv.NodeConfig(t, "n1"))
	kubelet := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		tr, err := kubeletClient.AuthenticationV1().TokenReviews().Create(r.Context(),
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: tok}}, metav1.CreateOptions{})
		if err != nil || !tr.Status.Authenticated || !contains(tr.Status.User.Groups, "system:masters") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/containerLogs/default/web/app" {
			http.Error(w, "no such container "+r.URL.Path, http.StatusNotFound)
			return
		}
		if r.URL.Query().Get("previous") == "true" {
			http.Error(w, `previous terminated container "app" in pod "web" not found`, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "hello from app\ntailLines=%s follow=%s\n", r.URL.Query().Get("tailLines"), r.URL.Query().Get("follow"))
	}))
	defer kubelet.Close()
	u, _ := url.Parse(kubelet.URL)
	port, _ := strconv.Atoi(u.Port())
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
	}}
	if _, err := kubeletClient.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := boundPod("web", "n1")
	pod.Spec.Containers[0].Name = "app"
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tail := int64(5)
	out, err := srv.Client.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
	if err != nil || string(out) != "hello from app\ntailLines=5 follow=\n" {
		t.Fatalf("client-go logs: %v %q", err, out)
	}
	k := newKubectl(t, srv)
	if got := k.ok("logs", "web", "-f"); got != "hello from app\ntailLines= follow=true\n" {
		t.Fatalf("kubectl logs -f: %q", got)
	}
	if got, err := k.run("logs", "web", "-c", "nope"); err == nil || !strings.Contains(got, "container nope is not valid") {
		t.Fatalf("kubectl logs of a missing container: %v %q", err, got)
	}
	// The kubelet's refusal reaches the user in its own words, as a BadRequest.
	if got, err := k.run("logs", "web", "--previous"); err == nil ||
		!strings.Contains(got, `Error from server (BadRequest): previous terminated container "app" in pod "web" not found`) {
		t.Fatalf("kubectl logs --previous: %v %q", err, got)
	}
	// A node credential may not read logs.
	if _, err := kubeletClient.CoreV1().Pods("default").GetLogs("web", &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
		t.Fatal("node credential read pod logs")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
