package kubelet_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/kubelet/netpol"
)

// waitPolicyTable waits until the node's policy table isolates ip for ingress: a set of the
// table holds it and the forward chain sends it to the ingress chain.
func waitPolicyTable(t *testing.T, table, ip string, isolated bool) {
	t.Helper()
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	want := netip.MustParseAddr(ip).As4()
	tb := &nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		sets, err := conn.GetSets(tb)
		if err != nil {
			continue
		}
		found := false
		for _, s := range sets {
			els, err := conn.GetSetElements(s)
			if err != nil {
				continue
			}
			for _, e := range els {
				if string(e.Key) == string(want[:]) {
					found = true
				}
			}
		}
		if found == isolated {
			return
		}
	}
	t.Fatalf("table %s never had %s isolated=%v", table, ip, isolated)
}

// TestNetworkPolicyWithKubelet: a real kubelet enforces NetworkPolicy on its pods: a web
// pod is reachable by IP; a default-deny policy blocks a client; an allow rule for pods
// labelled role=client on port 8080 lets exactly those in; deleting the policies opens it
// again. Every packet stays on the test's bridge.
func TestNetworkPolicyWithKubelet(t *testing.T) {
	srv := apiservertest.Start(t)
	n := servicesNode(t, srv, "node-np")
	ctx := context.Background()
	web := webPod("web-0", 0)
	web.Spec.NodeName = n.name
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ip := waitPod(t, srv.Client, "default", "web-0", "ready", podReady).Status.PodIP
	table := netpol.TableName(n.root)
	// client tries up to tries times (an allowed client's own address reaches the
	// policy's sets only once its pod reported it) and says whether it got through.
	client := func(name string, labels map[string]string, tries int) string {
		t.Helper()
		p := clientPod(name, fmt.Sprintf("for i in $(seq %d); do if timeout 2 wget -qO- http://%s:8080/; then echo REACHED; exit 0; fi; sleep 1; done; echo BLOCKED", tries, ip))
		p.Labels, p.Spec.NodeName = labels, n.name
		if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPod(t, srv.Client, "default", name, "finished", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
		})
		return kubectl(t, srv, "logs", name)
	}
	if out := client("c1", nil, 1); !strings.Contains(out, "web-0") || !strings.Contains(out, "REACHED") {
		t.Fatalf("no policy: %q", out)
	}
	nps := srv.Client.NetworkingV1().NetworkPolicies("default")
	deny := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	if _, err := nps.Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPolicyTable(t, table, ip, true)
	if out := client("c2", map[string]string{"role": "client"}, 1); !strings.Contains(out, "BLOCKED") {
		t.Fatalf("default deny: %q", out)
	}
	port := intstr.FromInt32(8080)
	allow := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}}}}
	if _, err := nps.Create(ctx, allow, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := client("c3", map[string]string{"role": "client"}, 10); !strings.Contains(out, "REACHED") {
		t.Fatalf("allowed client: %q", out)
	}
	if out := client("c4", map[string]string{"role": "other"}, 1); !strings.Contains(out, "BLOCKED") {
		t.Fatalf("other client: %q", out)
	}
	for _, name := range []string{"deny", "web"} {
		if err := nps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitPolicyTable(t, table, ip, false)
	if out := client("c5", nil, 1); !strings.Contains(out, "REACHED") {
		t.Fatalf("policies deleted: %q", out)
	}
}
