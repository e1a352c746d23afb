package netpol

import (
	"fmt"
	"io"
	"net"
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
		pods = append(pods, mkPod(fmt.Sprintf("ns%d", i%10), fmt.Sprintf("p%d", i), fmt.Sprintf("10.65.%d.%d", 10+i/50, i%50+2),
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

// BenchmarkNetpolThroughput is TCP throughput between the lab's two pods through the
// node's bridge without a policy table and with 100 policies (benchCluster's) plus one
// that isolates both pods and allows the client to the server, last in the chains: the
// cost of policies on an established stream (the conntrack rule accepts it first).
//
//	go test -run '^$' -bench NetpolThroughput -benchtime 20x ./kubelet/netpol
func BenchmarkNetpolThroughput(b *testing.B) {
	l := newLab(b)
	var ln net.Listener
	inNetns(b, l.podB, func() {
		var err error
		if ln, err = net.Listen("tcp4", ":56446"); err != nil {
			b.Error(err)
		}
	})
	if ln == nil {
		b.FailNow()
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	const perOp = 64 << 20
	buf := make([]byte, 256<<10)
	nps, pods, nss := benchCluster(100)
	pods = append(pods, mkPod("ns0", "client", "10.65.0.2", map[string]string{"lab": "client"}),
		mkPod("ns0", "server", "10.65.0.3", map[string]string{"lab": "server"}))
	both := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
	nps = append(nps,
		policy("ns0", "zz-client", sel("lab", "client"), both, nil, []networkingv1.NetworkPolicyEgressRule{{
			To: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("lab", "server")}}, Ports: []networkingv1.NetworkPolicyPort{tcp(56446)}}}),
		policy("ns0", "zz-server", sel("lab", "server"), both, []networkingv1.NetworkPolicyIngressRule{{
			From: []networkingv1.NetworkPolicyPeer{{PodSelector: sel("lab", "client")}}, Ports: []networkingv1.NetworkPolicyPort{tcp(56446)}}}, nil))
	for _, n := range []int{0, 100} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			if n > 0 {
				tbl, err := newTable("wasmkube-netpol-bench", nftables.WithNetNSFd(l.nodeFd))
				if err != nil {
					b.Fatal(err)
				}
				defer tbl.remove()
				if err := tbl.apply(Plan(nps, pods, nss)); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(perOp)
			for i := 0; i < b.N; i++ {
				var c net.Conn
				inNetns(b, l.podA, func() {
					var err error
					if c, err = net.Dial("tcp4", "10.65.0.3:56446"); err != nil {
						b.Error(err)
					}
				})
				if c == nil {
					b.FailNow()
				}
				for sent := 0; sent < perOp; sent += len(buf) {
					if _, err := c.Write(buf); err != nil {
						b.Fatal(err)
					}
				}
				c.Close()
			}
		})
	}
}
