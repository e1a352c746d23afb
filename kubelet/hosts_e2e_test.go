package kubelet_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
)

// A pod with hostname and subdomain (as a StatefulSet's pods have) finds its fully
// qualified name in /etc/hosts, as upstream's kubelet writes it, both in a new sandbox and
// in one claimed from the warm pool; a pod without a subdomain gets its short name only.
func TestHostsFileNamesPodFQDN(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()
	cold := &node{name: "hosts-cold", root: t.TempDir(), daemon: nodetest.Containerd(t)}
	cold.net = nodetest.Network(t, filepath.Join(cold.root, "cni"))
	startKubelet(t, srv, cold, true)
	warm := warmNode(t, srv, "hosts-warm", true)
	pooled := waitWarm(t, warm, 2)

	hostsOf := func(n *node, name, hostname, subdomain string) (*v1.Pod, string) {
		t.Helper()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{NodeName: n.name, Hostname: hostname, Subdomain: subdomain, TerminationGracePeriodSeconds: int64p(0),
				AutomountServiceAccountToken: &noToken,
				Containers:                   []v1.Container{busybox("app", "cat /etc/hosts; echo end; sleep 3600")}}}
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, srv.Client, "default", name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
		return p, waitLog(t, srv, n, name, "app", "end")
	}

	p, out := hostsOf(cold, "web-0", "web-0", "nginx")
	if want := p.Status.PodIP + "\tweb-0.nginx.default.svc.cluster.local\tweb-0\n"; !strings.Contains(out, want) {
		t.Errorf("new sandbox: /etc/hosts lacks %q:\n%s", want, out)
	}
	p, out = hostsOf(warm, "web-1", "web-1", "nginx")
	if _, ok := pooled[sandboxOf(t, warm, p).ID]; !ok {
		t.Errorf("pod web-1 did not take a warm sandbox (%v)", ids(pooled))
	}
	if want := p.Status.PodIP + "\tweb-1.nginx.default.svc.cluster.local\tweb-1\n"; !strings.Contains(out, want) {
		t.Errorf("warm sandbox: /etc/hosts lacks %q:\n%s", want, out)
	}
	p, out = hostsOf(cold, "plain", "", "")
	if want := p.Status.PodIP + "\tplain\n"; !strings.Contains(out, want) || strings.Contains(out, ".svc.") {
		t.Errorf("pod without subdomain: want %q and no FQDN:\n%s", want, out)
	}
}
