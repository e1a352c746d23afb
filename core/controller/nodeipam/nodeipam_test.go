package nodeipam_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller/nodeipam"
)

// startIPAM runs a node IPAM controller as the controller manager's user; the returned
// func stops it and waits until it has stopped.
func startIPAM(t *testing.T, srv *apiservertest.Server, o nodeipam.Options) (stop func()) {
	t.Helper()
	client, err := kubernetes.NewForConfig(srv.ControllerManagerConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	f := informers.NewSharedInformerFactory(client, 0)
	c, err := nodeipam.New(client, f, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-ipam-controller"}), o,
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); c.Run(ctx, 2) }()
	var once sync.Once
	stop = func() {
		once.Do(func() { cancel(); wg.Wait(); f.Shutdown(); b.Shutdown() })
	}
	t.Cleanup(stop)
	return stop
}

func createNode(t *testing.T, client kubernetes.Interface, name, podCIDR string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if podCIDR != "" {
		n.Spec.PodCIDR, n.Spec.PodCIDRs = podCIDR, []string{podCIDR}
	}
	if _, err := client.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds; a test waits for behaviour, not for speed.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func podCIDR(t *testing.T, client kubernetes.Interface, name string) string {
	n, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{n.Spec.PodCIDR}
	if n.Spec.PodCIDR == "" {
		want = nil
	}
	if fmt.Sprint(n.Spec.PodCIDRs) != fmt.Sprint(want) {
		t.Fatalf("node %s: podCIDR %q and podCIDRs %v disagree", name, n.Spec.PodCIDR, n.Spec.PodCIDRs)
	}
	return n.Spec.PodCIDR
}

func waitCIDR(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	var got string
	waitFor(t, "a pod CIDR on node "+name, func() bool { got = podCIDR(t, client, name); return got != "" })
	return got
}

// TestNodeIPAM: Nodes get distinct subnets once, a subnet a Node already has is never
// given again (also after a restart of the controller, which knows only the Nodes), the
// used-up cluster CIDR is an Event on the Node that waits, and a deleted Node's subnet
// goes to the waiting one.
func TestNodeIPAM(t *testing.T) {
	srv := apiservertest.Start(t)
	client := srv.Client
	opts := nodeipam.Options{ClusterCIDR: "10.64.0.0/22", NodeMaskSize: 24} // four node subnets

	// A node that registered with its own subnet (a kubelet's --pod-cidr) before the
	// controller ever ran.
	createNode(t, client, "pre", "10.64.0.0/24")
	stop := startIPAM(t, srv, opts)
	createNode(t, client, "a", "")
	createNode(t, client, "b", "")
	a, b := waitCIDR(t, client, "a"), waitCIDR(t, client, "b")
	got := map[string]bool{"10.64.0.0/24": true}
	for _, c := range []string{a, b} {
		if got[c] {
			t.Fatalf("subnet %s given twice (a=%s b=%s)", c, a, b)
		}
		got[c] = true
	}

	// Restart: a node created while no controller runs gets the one subnet left.
	stop()
	createNode(t, client, "c", "")
	startIPAM(t, srv, opts)
	if c := waitCIDR(t, client, "c"); got[c] {
		t.Fatalf("after a restart node c got %s, which another node holds (%v)", c, got)
	} else {
		got[c] = true
	}

	// Exhausted: node d waits with an Event saying why.
	createNode(t, client, "d", "")
	waitFor(t, "a CIDRNotAvailable Event on node d", func() bool {
		evs, err := client.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Node" && e.InvolvedObject.Name == "d" && e.Reason == nodeipam.ReasonCIDRNotAvailable {
				return true
			}
		}
		return false
	})
	if c := podCIDR(t, client, "d"); c != "" {
		t.Fatalf("node d got %s out of a used-up cluster CIDR", c)
	}

	// Node a's subnet is released with it and given to the waiting d.
	if err := client.CoreV1().Nodes().Delete(context.Background(), "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := waitCIDR(t, client, "d"); d != a {
		t.Fatalf("node d got %s, want the deleted node a's %s", d, a)
	}
	// Nothing changed a subnet once given.
	for name, want := range map[string]string{"pre": "10.64.0.0/24", "b": b} {
		if c := podCIDR(t, client, name); c != want {
			t.Fatalf("node %s: podCIDR %s, want %s (never changed)", name, c, want)
		}
	}
}
