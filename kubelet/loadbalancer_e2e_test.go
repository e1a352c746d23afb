package kubelet_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
)

// TestLoadBalancerIngressOnNode: the node proxy answers a LoadBalancer Service on its
// status.loadBalancer.ingress address at the service port (what servicelb writes: the
// nodes' addresses; here the node's bridge gateway, so everything stays on the test's
// bridge), from the host and from a pod.
func TestLoadBalancerIngressOnNode(t *testing.T) {
	srv := apiservertest.Start(t)
	n := servicesNode(t, srv, "node-lb")
	ctx := context.Background()
	web := webPod("web-0", 0)
	web.Spec.NodeName = n.name
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	svcs := srv.Client.CoreV1().Services("default")
	lb, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-lb"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
		Ports: []v1.ServicePort{{Name: "http", Port: 56460, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gw := strings.TrimSuffix(n.net.PodCIDR, "0/24") + "1"
	lb.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: gw}}
	if _, err := svcs.UpdateStatus(ctx, lb, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, srv.Client, "default", "web-0", "ready", podReady)
	url := "http://" + gw + ":56460/"
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			continue // the rules or the slice are not there yet
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body = strings.TrimSpace(string(b)); body == "web-0" {
			break
		}
	}
	if body != "web-0" {
		t.Fatalf("GET %s from the host: %q", url, body)
	}
	if out := runClient(t, srv, n, "c", "timeout 5 wget -qO- "+url); !strings.Contains(out, "web-0") {
		t.Fatalf("GET %s from a pod: %q", url, out)
	}
}
