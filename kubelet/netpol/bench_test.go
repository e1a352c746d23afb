package netpol

import (
	"fmt"
	"testing"

	"github.com/google/nftables"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// benchCluster is 100 pods in 10 namespaces and n policies: each selects the pods of one
// app in its namespace, isolates them both ways, and allows ingress from another app's
// pods in namespaces of a team on two ports and a named port, egress to an ipBlock with an
// except and to DNS.
func benchCluster(n int) ([]*networkingv1.NetworkPolicy, []*v1.Pod, []*v1.Namespace) {
	var pods []*v1.Pod
	var nss []*v1.Namespace
	for i := range 10 {
		nss = append(nss, mkNS(fmt.Sprintf("ns%d", i), map[string]string{"team": fmt.Sprint(i % 3)}))
	}
	for i := range 100 {
		pods = append(pods, mkPod(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("p%d", i), fmt.Sprintf("10.65.%d.%d", i/50, i%50+2),
			map[string]string{"app": fmt.Sprintf("app%d", i%7)}, v1.ContainerPort{Name: "http", ContainerPort: 8080}))
	}
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	var nps []*networkingv1.NetworkPolicy
	for i := range n {
		np := policy(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("np%d", i), sel("app", fmt.Sprintf("app%d", i%7)), both,
			[]networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: sel("team", fmt.Sprint(i%3)), PodSelector: sel("app", fmt.Sprintf("app%d", (i+1)%7))}},
				Ports: []networkingv1.NetworkPolicyPort{tcp(80), tcp(int32(1000 + i)), {Port: ptrIntstr("http")}},
			}},
			[]networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.96.0.0/16"}}}}},
				{Ports: []networkingv1.NetworkPolicyPort{tcp(53)}},
			})
		nps = append(nps, np)
	}
	return nps, pods, nss
}

// BenchmarkNetpolProgram is issue 26's target: after a change (a pod's address), the time
// until the node's table holds the new rules: Plan over 500 policies x 100 pods and the
// whole table written in one netlink transaction, acknowledged by the kernel, in a network
// namespace the benchmark creates.
//
//	go test -run '^$' -bench NetpolProgram -benchtime 20x ./kubelet/netpol
func BenchmarkNetpolProgram(b *testing.B) {
	l := newLab(b)
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			nps, pods, nss := benchCluster(n)
			tbl, err := newTable("wasmkube-netpol-bench", nftables.WithNetNSFd(l.nodeFd))
			if err != nil {
				b.Fatal(err)
			}
			defer tbl.remove()
			rs := Plan(nps, pods, nss)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				p := pods[i%len(pods)].DeepCopy()
				p.Status.PodIP = fmt.Sprintf("10.65.9.%d", i%250+1)
				changed := append(append([]*v1.Pod(nil), pods...), p)
				if err := tbl.apply(Plan(nps, changed, nss)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(rs.Rules)), "rules")
			b.ReportMetric(float64(len(rs.Sets)), "sets")
		})
	}
}

// BenchmarkNetpolPlan is Plan alone over 500 policies x 100 pods.
func BenchmarkNetpolPlan(b *testing.B) {
	nps, pods, nss := benchCluster(500)
	for i := 0; i < b.N; i++ {
		Plan(nps, pods, nss)
	}
}
