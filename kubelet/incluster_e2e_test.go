package kubelet_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/proxy"
)

// A pod with the default service account calls https://kubernetes.default.svc with its
// mounted token and ca.crt, the API server listening on loopback plus the node's
// pod-bridge gateway (its advertise address, as under `wasmkube up`): the cluster DNS
// names the Service, the node's proxy DNATs 10.96.0.1:443 to the gateway, the certificate
// verifies, and the token authenticates as system:serviceaccount:default:default, which
// RBAC refuses (403) until a RoleBinding grants it the pods (200).
func TestPodCallsAPIThroughKubernetesService(t *testing.T) {
	root := t.TempDir()
	n := &node{name: "incluster-node", root: root, daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(root, "cni"))
	gw, err := kubelet.GatewayIP(n.net.PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	srv := apiservertest.Start(t, apiservertest.WithAdvertiseAddress(gw))
	ctx := context.Background()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "https://127.0.0.1"), ":")
	ep, err := srv.Client.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) != 1 || len(ep.Subsets[0].Addresses) != 1 || ep.Subsets[0].Addresses[0].IP != gw ||
		fmt.Sprint(ep.Subsets[0].Ports[0].Port) != port {
		t.Fatalf("kubernetes Endpoints %+v, want %s:%s", ep.Subsets, gw, port)
	}

	table := proxy.TableName(n.net.Bridge, root)
	t.Cleanup(func() {
		if err := proxy.RemoveTable(table); err != nil {
			t.Errorf("remove table: %v", err)
		}
	})
	startKubelet(t, srv, n, true)

	bin := filepath.Join(t.TempDir(), "incluster")
	build := exec.Command("go", "build", "-o", bin, "./testdata/incluster")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the in-cluster client: %v\n%s", err, out)
	}
	call := func(name string) string {
		t.Helper()
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: n.name, RestartPolicy: v1.RestartPolicyNever, TerminationGracePeriodSeconds: int64p(0),
				Containers: []v1.Container{{Name: "c", Image: "wasmkube.local/busybox:latest", ImagePullPolicy: v1.PullIfNotPresent,
					Command:      []string{"/client/incluster"},
					VolumeMounts: []v1.VolumeMount{{Name: "client", MountPath: "/client", ReadOnly: true}}}},
				Volumes: []v1.Volume{{Name: "client", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Dir(bin)}}}}}}
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		p := waitPod(t, srv.Client, "default", name, "finished", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
		})
		if p.Spec.ServiceAccountName != "default" {
			t.Errorf("pod %s: serviceAccountName %q, want default", name, p.Spec.ServiceAccountName)
		}
		out := kubectl(t, srv, "logs", name)
		t.Logf("%s:\n%s", name, out)
		return out
	}

	out := call("denied")
	if !strings.Contains(out, "status=403") || !strings.Contains(out, `system:serviceaccount:default:default`) {
		t.Fatalf("before any grant: want 403 naming the service account, got:\n%s", out)
	}
	kubectl(t, srv, "create", "role", "pod-reader", "--verb=get,list", "--resource=pods")
	kubectl(t, srv, "create", "rolebinding", "pod-reader", "--role=pod-reader", "--serviceaccount=default:default")
	out = call("allowed")
	if !strings.Contains(out, "status=200") || !strings.Contains(out, `"kind":"PodList"`) {
		t.Fatalf("with the RoleBinding: want 200 and a PodList, got:\n%s", out)
	}
}
