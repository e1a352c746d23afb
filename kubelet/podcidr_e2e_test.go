package kubelet_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
)

// TestPodCIDRFromNode: a kubelet without --pod-cidr waits for its Node's spec.podCIDR
// (node IPAM's, set here by the test) and wires its pods in that subnet; a kubelet whose
// --pod-cidr disagrees with the subnet its Node holds refuses to run, naming both.
func TestPodCIDRFromNode(t *testing.T) {
	srv := apiservertest.Start(t)
	ctx := context.Background()

	n := &node{name: "node-ipam", root: t.TempDir(), daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(n.root, "cni"))
	subnet := n.net.PodCIDR
	n.net.PodCIDR = "" // from the Node
	startKubelet(t, srv, n, true)
	var node *v1.Node
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, err := srv.Client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{}); err == nil {
			node = got
			break
		}
	}
	if node == nil || node.Spec.PodCIDR != "" {
		t.Fatalf("node registered with %v, want it without a pod subnet", node)
	}
	patch := fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":[%q]}}`, subnet, subnet)
	if _, err := srv.Client.CoreV1().Nodes().Patch(ctx, n.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "in-subnet", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: n.name, Containers: []v1.Container{{Name: "c", Image: "wasmkube.local/busybox:latest",
			ImagePullPolicy: v1.PullNever, Command: []string{"sleep", "3600"}}}}}
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := waitPod(t, srv.Client, "default", "in-subnet", "running with an IP", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && p.Status.PodIP != ""
	})
	if ip, err := netip.ParseAddr(got.Status.PodIP); err != nil || !netip.MustParsePrefix(subnet).Contains(ip) {
		t.Errorf("pod IP %s is not in the node's subnet %s", got.Status.PodIP, subnet)
	}

	// A Node that holds another subnet than the kubelet's --pod-cidr.
	other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-other"}, Spec: v1.NodeSpec{PodCIDR: "10.99.7.0/24", PodCIDRs: []string{"10.99.7.0/24"}}}
	if _, err := srv.Client.CoreV1().Nodes().Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := nodetest.Containerd(t)
	root := t.TempDir()
	net := nodetest.Network(t, filepath.Join(root, "cni"))
	k, err := kubelet.New(ctx, kubelet.Options{RESTConfig: srv.NodeConfig(t, "node-other"), NodeName: "node-other", RootDir: root,
		ContainerdAddress: d.Address(), Snapshotter: d.Snapshotter(), PodCIDR: net.PodCIDR, Bridge: net.Bridge,
		ServerAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	err = k.Run(runCtx)
	var me *kubelet.PodCIDRMismatchError
	if !errors.As(err, &me) || me.Allocated != "10.99.7.0/24" || me.Override != net.PodCIDR || me.Node != "node-other" {
		t.Fatalf("Run = %v, want a PodCIDRMismatchError naming node-other, 10.99.7.0/24 and %s", err, net.PodCIDR)
	}
}
