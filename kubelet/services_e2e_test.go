package kubelet_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"

	"github.com/wasmkube/wasmkube/core/apiserver/apiservertest"
	"github.com/wasmkube/wasmkube/core/controller/endpoints"
	"github.com/wasmkube/wasmkube/core/controller/endpointslice"
	"github.com/wasmkube/wasmkube/kubelet/internal/nodetest"
	"github.com/wasmkube/wasmkube/kubelet/proxy"
)

// servicesNode is a real kubelet (proxy and DNS on) with the endpoints and EndpointSlice
// controllers running against the same API server. Its nftables table is removed at cleanup even if the
// kubelet did not stop cleanly.
func servicesNode(t *testing.T, srv *apiservertest.Server, name string) *node {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactory(srv.Client, 0)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel()}))
	ep, err := endpoints.New(srv.Client, f, log)
	if err != nil {
		t.Fatal(err)
	}
	es, err := endpointslice.New(srv.Client, f, log)
	if err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	done := make(chan struct{}, 2)
	go func() { ep.Run(ctx, 2); done <- struct{}{} }()
	go func() { es.Run(ctx, 2); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done; f.Shutdown() })

	root := t.TempDir()
	n := &node{name: name, root: root, daemon: nodetest.Containerd(t)}
	n.net = nodetest.Network(t, filepath.Join(root, "cni"))
	table := proxy.TableName(n.net.Bridge, root)
	t.Cleanup(func() {
		if err := proxy.RemoveTable(table); err != nil {
			t.Errorf("remove table: %v", err)
		}
	})
	startKubelet(t, srv, n, true)
	if got := n.kubelet.ProxyTable(); got != table {
		t.Fatalf("proxy table %q, want %q", got, table)
	}
	return n
}

// webPod serves its own name at / on 8080, and is ready while /www/ready exists.
func webPod(name string, hostPort int32) *v1.Pod {
	c := busybox("web", "mkdir -p /www && echo "+name+" > /www/index.html && touch /www/ready && exec httpd -f -p 8080 -h /www")
	c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: hostPort}}
	c.ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http")}},
		PeriodSeconds: 1, FailureThreshold: 1}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{c}, TerminationGracePeriodSeconds: int64p(2), AutomountServiceAccountToken: &noToken}}
}

// clientPod runs script once and exits; its log is the test's observation.
func clientPod(name, script string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{Containers: []v1.Container{busybox("c", script)}, RestartPolicy: v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: int64p(2), AutomountServiceAccountToken: &noToken}}
}

// noToken keeps the service account volume out of the test's pods: nothing here runs the
// controller that publishes kube-root-ca.crt.
var noToken = false

func runClient(t *testing.T, srv *apiservertest.Server, n *node, name, script string) string {
	t.Helper()
	ctx := context.Background()
	p := clientPod(name, script)
	p.Spec.NodeName = n.name
	if _, err := srv.Client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, srv.Client, "default", name, "finished", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})
	out := kubectl(t, srv, "logs", name)
	t.Logf("%s:\n%s", name, out)
	return out
}

func waitEndpoints(t *testing.T, srv *apiservertest.Server, name, what string, cond func(*v1.Endpoints) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		e, err := srv.Client.CoreV1().Endpoints("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && cond(e) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("endpoints %s never %s", name, what)
}

// waitBackends waits until chain of table DNATs to ips alone (read back from the kernel).
func waitBackends(t *testing.T, table, chain string, ips []string) {
	t.Helper()
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join(ips, ",")
	var got string
	for i := 0; i < 300; i++ {
		rules, err := conn.GetRules(&nftables.Table{Name: table, Family: nftables.TableFamilyIPv4}, &nftables.Chain{Name: chain})
		if err == nil {
			var seen []string
			for _, r := range rules {
				for _, e := range r.Exprs {
					if im, ok := e.(*expr.Immediate); ok && len(im.Data) == 4 {
						seen = append(seen, net.IP(im.Data).String())
					}
				}
			}
			if got = strings.Join(seen, ","); got == want {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("chain %s of table %s DNATs to %q, want %q", chain, table, got, want)
}

func readyIPs(e *v1.Endpoints) []string {
	var ips []string
	for _, s := range e.Subsets {
		for _, a := range s.Addresses {
			ips = append(ips, a.IP)
		}
	}
	return ips
}

// TestServicesCarryTraffic: pods on the test's own bridge reach a Service by DNS name
// (full, namespace-relative and short), by cluster IP (from the service environment
// variables), by NodePort and by hostPort on the bridge's gateway; a headless Service
// resolves to its pods, a named port has an SRV record; a cluster IP without endpoints is
// refused on the node; ClientIP affinity keeps a client on one backend; a pod that turns unready leaves the rotation. Every packet stays
// between the test's network namespaces and the node.
func TestServicesCarryTraffic(t *testing.T) {
	srv := apiservertest.Start(t)
	n := servicesNode(t, srv, "node-svc")
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	for i, name := range []string{"web-0", "web-1"} {
		p := webPod(name, int32(18080*(1-i))) // web-0 publishes hostPort 18080
		p.Spec.NodeName = n.name
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svcs := srv.Client.CoreV1().Services("default")
	web, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{
		Type: v1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
		Ports: []v1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-headless"}, Spec: v1.ServiceSpec{
		ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "web"},
		Ports: []v1.ServicePort{{Name: "http", Port: 8080}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sticky"}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, SessionAffinity: v1.ServiceAffinityClientIP,
		Ports: []v1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	empty, err := svcs.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "nothing"}, Ports: []v1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ips []string
	for _, name := range []string{"web-0", "web-1"} {
		p := waitPod(t, srv.Client, "default", name, "ready", podReady)
		ips = append(ips, p.Status.PodIP)
	}
	waitEndpoints(t, srv, "web", "lists both pods as ready", func(e *v1.Endpoints) bool { return len(readyIPs(e)) == 2 })
	gw := strings.TrimSuffix(n.net.PodCIDR, "0/24") + "1"
	nodePort := web.Spec.Ports[0].NodePort

	// (busybox 1.35's wget -T crashes; timeout bounds a request instead.)
	// 12 requests per way: both backends answer by each (a miss has odds 2^-11).
	loop := func(tag, url string) string {
		return fmt.Sprintf(`for i in $(seq 12); do echo "%s $(timeout 5 wget -qO- %s 2>&1)"; done; `, tag, url)
	}
	out := runClient(t, srv, n, "client",
		`cat /etc/resolv.conf; env | grep -E '^(WEB|KUBERNETES)_' | sort; `+
			loop("fqdn", "http://web.default.svc.cluster.local/")+
			loop("short", "http://web/")+
			loop("ns", "http://web.default/")+
			loop("env", "http://$WEB_SERVICE_HOST:$WEB_SERVICE_PORT/")+
			loop("nodeport", fmt.Sprintf("http://%s:%d/", gw, nodePort))+
			loop("sticky", "http://sticky/")+
			fmt.Sprintf(`echo "hostport $(timeout 5 wget -qO- http://%s:18080/ 2>&1)"; `, gw)+
			`echo "empty $(timeout 5 wget -qO- http://$EMPTY_SERVICE_HOST/ 2>&1)"; `+
			`nslookup web-headless.default.svc.cluster.local; nslookup -type=SRV _http._tcp.web.default.svc.cluster.local; `+
			`nslookup nosuch.default.svc.cluster.local; true`)

	if !strings.Contains(out, "nameserver "+gw) || !strings.Contains(out, "search default.svc.cluster.local svc.cluster.local cluster.local") ||
		!strings.Contains(out, "options ndots:5") {
		t.Errorf("resolv.conf does not name the node's DNS at %s with the cluster search path", gw)
	}
	for _, want := range []string{"WEB_SERVICE_HOST=" + web.Spec.ClusterIP, "WEB_SERVICE_PORT=80", "WEB_SERVICE_PORT_HTTP=80",
		"WEB_PORT=tcp://" + web.Spec.ClusterIP + ":80", "WEB_PORT_80_TCP_ADDR=" + web.Spec.ClusterIP, "KUBERNETES_SERVICE_HOST=10.96.0.1"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("service environment lacks %s", want)
		}
	}
	for _, tag := range []string{"fqdn", "short", "ns", "env", "nodeport"} {
		for _, backend := range []string{"web-0", "web-1"} {
			if !strings.Contains(out, tag+" "+backend+"\n") {
				t.Errorf("by %s: %s never answered", tag, backend)
			}
		}
		if strings.Count(out, tag+" web-") != 12 {
			t.Errorf("by %s: %d of 12 requests answered", tag, strings.Count(out, tag+" web-"))
		}
	}
	if a, b := strings.Count(out, "sticky web-0\n"), strings.Count(out, "sticky web-1\n"); a+b != 12 || a != 0 && b != 0 {
		t.Errorf("sessionAffinity ClientIP: web-0 answered %d, web-1 %d of 12 requests; want one of them all", a, b)
	}
	if !strings.Contains(out, "hostport web-0\n") {
		t.Errorf("hostPort 18080 on %s did not reach web-0", gw)
	}
	if !strings.Contains(out, "empty wget: can't connect to remote host ("+empty.Spec.ClusterIP+"): Connection refused") {
		t.Errorf("a cluster IP without endpoints was not refused on the node")
	}
	for _, ip := range ips {
		if !strings.Contains(out, "Address: "+ip+"\n") {
			t.Errorf("headless service did not resolve to pod IP %s", ip)
		}
	}
	if !strings.Contains(out, "service = 0 100 80 web.default.svc.cluster.local") {
		t.Errorf("no SRV record for the named port http")
	}
	if !strings.Contains(out, "can't find nosuch.default.svc.cluster.local: NXDOMAIN") {
		t.Errorf("a missing service is not NXDOMAIN")
	}

	// web-1 turns unready: it leaves the Endpoints' addresses, then the rotation.
	p1, err := pods.Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := n.kubelet.Runtime().ListContainers(ctx, string(p1.UID))
	if err != nil || len(cs) == 0 {
		t.Fatalf("containers of web-1: %v %v", cs, err)
	}
	if res, err := n.kubelet.Runtime().ExecSync(ctx, cs[0].ID, []string{"rm", "/www/ready"}, 10*time.Second); err != nil || res.ExitCode != 0 {
		t.Fatalf("rm /www/ready in web-1: %+v %v", res, err)
	}
	waitEndpoints(t, srv, "web", "drops web-1", func(e *v1.Endpoints) bool {
		r := readyIPs(e)
		return len(r) == 1 && r[0] == ips[0]
	})
	waitBackends(t, n.kubelet.ProxyTable(), "svc-default/web/http/tcp", ips[:1])
	out = runClient(t, srv, n, "client-after", loop("after", "http://web/"))
	if strings.Count(out, "after web-0\n") != 12 {
		t.Errorf("with web-1 unready, want all 12 requests answered by web-0")
	}

	// A stopped kubelet leaves no rules behind.
	n.stop()
	conn, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tables, err := conn.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		if tb.Name == n.kubelet.ProxyTable() {
			t.Errorf("table %s left after the kubelet stopped", tb.Name)
		}
	}
}
