package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUpWebhookServerChart installs the example webhook server on `wasmkube up` as a chart
// would, with the walkthrough's own script (examples/webhook-server/install.sh: openssl
// certificate, TLS Secret, Deployment of the image `make images` built, Service,
// ValidatingWebhookConfiguration with the caBundle), then, with kubectl only, a pod
// without the team label in an enforced namespace is refused with the webhook's message
// and a labelled one is admitted. The API server reaches the webhook at the Service's
// ClusterIP, which up's node proxy forwards to the pod. Its own resources: node wkh4
// (bridges wkh4t, wkh4p0), host network 10.114.200.0/24, cluster CIDR 10.114.0.0/17, API
// port 29143.
func TestUpWebhookServerChart(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed (install.sh makes the certificate with it)")
	}
	images, _ := filepath.Abs("../../bin/images")
	if _, err := os.Stat(filepath.Join(images, "webhook-server.tar")); err != nil {
		t.Fatalf("no webhook-server image archive in %s: run `make images`", images)
	}
	u := startUp(t, testUpOptions{Name: "wkh4", Nodes: 1, Port: "29143", HostNetwork: "10.114.200.0/24",
		ClusterCIDR: "10.114.0.0/17"})
	ctx := context.Background()
	waitUntil(t, "a Ready node", func() bool {
		n, err := u.Client.CoreV1().Nodes().Get(ctx, "wkh4", metav1.GetOptions{})
		return err == nil && nodeReady(n)
	})

	install := exec.Command("../../examples/webhook-server/install.sh")
	install.Env = append(os.Environ(), "KUBECONFIG="+u.Kubeconfig)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	waitUntil(t, "a ready endpoint of the webhook-server Service", func() bool {
		slices, err := u.Client.DiscoveryV1().EndpointSlices("webhook-server").List(ctx,
			metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=webhook-server"})
		if err != nil {
			return false
		}
		for _, s := range slices.Items {
			for _, ep := range s.Endpoints {
				if ep.Conditions.Ready != nil && *ep.Conditions.Ready {
					return true
				}
			}
		}
		return false
	})

	run := func(args ...string) string {
		t.Helper()
		out, err := u.kubectl(args...)
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("create", "namespace", "shop")
	run("label", "namespace", "shop", "webhook-server.wasmkube.io/enforce=true")
	// Until the node proxy has the Service's rules the call fails, which failurePolicy
	// Fail turns into a refusal of its own ("failed calling webhook"): wait for the
	// webhook's answer.
	const want = `admission webhook "require-team.webhook-server.wasmkube.io" denied the request: webhook-server: pod "web" must carry the label "team"`
	var last string
	waitUntil(t, "the webhook's refusal through the Service", func() bool {
		out, err := u.kubectl("-n", "shop", "run", "web", "--image=wasmkube.local/busybox", "--image-pull-policy=Never", "--", "sleep", "3600")
		last = out
		if err == nil {
			t.Fatalf("a pod without team was admitted in an enforced namespace: %s", out)
		}
		return strings.Contains(out, want)
	})
	if !strings.Contains(last, "Error from server (Forbidden)") {
		t.Errorf("the refusal is not a 403: %s", last)
	}
	if _, err := u.Client.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Errorf("the refused pod was stored")
	}
	run("-n", "shop", "run", "web", "--image=wasmkube.local/busybox", "--image-pull-policy=Never", "--labels=team=a", "--", "sleep", "3600")
	// a namespace the webhook's namespaceSelector does not take is not sent to it
	run("run", "free", "--image=wasmkube.local/busybox", "--image-pull-policy=Never", "--", "sleep", "3600")

	// the webhook server itself saw the refused request (its log, through the kubelet)
	pods, err := u.Client.CoreV1().Pods("webhook-server").List(ctx, metav1.ListOptions{LabelSelector: "app=webhook-server"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("webhook-server pods: %v %+v", err, pods)
	}
	logs := run("-n", "webhook-server", "logs", pods.Items[0].Name)
	if !strings.Contains(logs, "CREATE shop/web: allowed=false") || !strings.Contains(logs, "CREATE shop/web: allowed=true") {
		t.Errorf("the webhook server's log does not show the two requests:\n%s", logs)
	}
}
