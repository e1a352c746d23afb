package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/google/nftables"
)

// BenchmarkEndpointsChangeInForce is issue 13's target end to end: an EndpointSlice
// changes in the API (one of a service's 10 endpoints turns not ready, then ready again)
// and the time until the node's rules carry the change, i.e. until the netlink transaction
// that rewrote them was acknowledged by the kernel: the informer's delivery, the proxy's
// batching wait, Plan over the listers and the write. 1000 Services x 10 endpoints, each
// with a NodePort; the API is client-go's fake clientset (no API server: its watch latency
// is the API server's, not the proxy's), the table lives in a network namespace the
// benchmark creates.
//
//	go test -run '^$' -bench EndpointsChangeInForce -benchtime 20x ./kubelet/proxy
func BenchmarkEndpointsChangeInForce(b *testing.B) {
	opt := testNetns(b)
	const services, endpoints = 1000, 10
	cs := fake.NewClientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	eps := make([]*discoveryv1.EndpointSlice, services)
	tcp, portName, port := v1.ProtocolTCP, "http", int32(8080)
	for i := 0; i < services; i++ {
		name := fmt.Sprintf("svc-%d", i)
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeNodePort, ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1),
			Ports: []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: int32(30000 + i)}}}}
		if _, err := cs.CoreV1().Services("ns").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		ep := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name + "-a", Namespace: "ns",
			Labels: map[string]string{discoveryv1.LabelServiceName: name}}, AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: &portName, Protocol: &tcp, Port: &port}}}
		for j := 0; j < endpoints; j++ {
			ready := true
			ep.Endpoints = append(ep.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.42.%d.%d", j, i%250+1)},
				Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
		}
		if _, err := cs.DiscoveryV1().EndpointSlices("ns").Create(ctx, ep, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		eps[i] = ep
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	nodePods := informers.NewSharedInformerFactory(cs, 0).Core().V1().Pods().Informer()
	n := testNet
	n.MasqueradeAll = true
	p, err := New(Options{Network: n, Table: "wasmkube-bench-e2e", NodeName: "bench", Services: factory,
		NodePods: nodePods, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	// The table in the benchmark's own namespace, never the machine's.
	if p.tbl, err = newTable("wasmkube-bench-e2e", n, opt); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	go nodePods.Run(ctx.Done())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	waitApplied := func(after int) {
		for deadline := time.Now().Add(60 * time.Second); p.Applied() <= after; time.Sleep(100 * time.Microsecond) {
			if time.Now().After(deadline) {
				b.Fatal("the proxy never programmed the change")
			}
		}
	}
	waitApplied(0)
	// dnats is how many endpoints the kernel's chain of service i sends to.
	dnats := func(i int) int {
		tb := &nftables.Table{Name: "wasmkube-bench-e2e", Family: nftables.TableFamilyIPv4}
		rules, err := p.tbl.conn.GetRules(tb, &nftables.Chain{Name: fmt.Sprintf("svc-ns/svc-%d/http/tcp", i), Table: tb})
		if err != nil {
			b.Fatal(err)
		}
		return len(rules) / 2 // a hairpin mark and a DNAT per endpoint
	}
	change := func(i, ready int) time.Duration {
		ep := eps[i].DeepCopy()
		for j := range ep.Endpoints {
			r := j < ready
			ep.Endpoints[j].Conditions.Ready = &r
		}
		before := p.Applied()
		start := time.Now()
		if _, err := cs.DiscoveryV1().EndpointSlices("ns").Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		for {
			waitApplied(before)
			if got := dnats(i); got == ready {
				break
			}
			before = p.Applied() // a rewrite that began before the change: wait for the next
		}
		return time.Since(start)
	}
	var all []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		svc := (i * 37) % services
		all = append(all, change(svc, endpoints-1), change(svc, endpoints))
	}
	b.StopTimer()
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)-1].Microseconds())/1000, "max-ms")
}
