package proxy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// testNetns is a network namespace of the test's own, removed at cleanup: rules written
// there touch no traffic of the machine.
func testNetns(tb testing.TB) nftables.ConnOption {
	tb.Helper()
	if os.Getuid() != 0 {
		tb.Fatal("nftables tests need root")
	}
	name := fmt.Sprintf("wkproxy-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		tb.Fatalf("ip netns add: %v: %s", err, out)
	}
	fd, err := unix.Open(filepath.Join("/run/netns", name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		unix.Close(fd)
		_ = exec.Command("ip", "netns", "del", name).Run()
	})
	return nftables.WithNetNSFd(fd)
}

func bigRuleset(services, endpoints int) Ruleset {
	var rs Ruleset
	for i := 0; i < services; i++ {
		sp := ServicePort{Name: fmt.Sprintf("ns/svc-%d/http/tcp", i), ClusterIP: fmt.Sprintf("10.96.%d.%d", i/250, i%250+1),
			Protocol: v1.ProtocolTCP, Port: 80, NodePort: int32(30000 + i)}
		for j := 0; j < endpoints; j++ {
			sp.Endpoints = append(sp.Endpoints, Endpoint{IP: fmt.Sprintf("10.42.%d.%d", j, i%250+1), Port: 8080})
		}
		rs.Services = append(rs.Services, sp)
	}
	return rs
}

var testNet = Network{Bridge: "wkt0", PodCIDR: "10.42.0.0/16", ServiceCIDR: "10.96.0.0/16", NodeIPs: []string{"10.42.0.1", "127.0.0.1"}}

// TestTableInNetns writes a ruleset (random and ClientIP services, a hostPort) into a
// namespace of the test's own, reads the chains back, rewrites it smaller, and removes it.
func TestTableInNetns(t *testing.T) {
	opt := testNetns(t)
	tbl, err := newTable("wasmkube-test", testNet, opt)
	if err != nil {
		t.Fatal(err)
	}
	rs := bigRuleset(3, 2)
	rs.Services[1].Affinity = time.Hour
	rs.Services[2].ExternalIPs = []string{"10.65.0.9", "10.65.0.10"} // a LoadBalancer's nodes
	rs.HostPorts = []HostPort{{Pod: "ns/hp", Protocol: v1.ProtocolTCP, HostPort: 8081, PodIP: "10.42.0.5", ContainerPort: 80}}
	if err := tbl.apply(rs); err != nil {
		t.Fatal(err)
	}
	chains := func() map[string]int {
		tb := &nftables.Table{Name: "wasmkube-test", Family: nftables.TableFamilyIPv4}
		cs, err := tbl.conn.ListChainsOfTableFamily(nftables.TableFamilyIPv4)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, c := range cs {
			if c.Table.Name != tb.Name {
				continue
			}
			rules, err := tbl.conn.GetRules(tb, c)
			if err != nil {
				t.Fatal(err)
			}
			out[c.Name] = len(rules)
		}
		return out
	}
	got := chains()
	// services: 3 ClusterIP rules; nodeports: 3 + 2 for the hostPort; a random service: 2
	// hairpin marks and 2 DNATs; the ClientIP one: 2 lookups, 2 picks, and per endpoint a
	// chain of mark, set update and DNAT.
	// external: one rule per external IP.
	want := map[string]int{"services": 3, "nodeports": 5, "external": 2, "mark-for-masquerade": 1, "prerouting": 3, "output": 3,
		"postrouting": 1, "filter-forward": 2, "filter-output": 2,
		"svc-ns/svc-0/http/tcp": 4, "svc-ns/svc-1/http/tcp": 4, "svc-ns/svc-2/http/tcp": 4,
		"svc-ns/svc-1/http/tcp/10.42.0.2:8080": 3, "svc-ns/svc-1/http/tcp/10.42.1.2:8080": 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("chains and rule counts:\n got %v\nwant %v", got, want)
	}
	// Only endpoints change: svc-0's chain alone is rewritten, to one backend.
	rs.Services[0].Endpoints = rs.Services[0].Endpoints[:1]
	if ok, err := tbl.applyEndpoints(rs); !ok || err != nil {
		t.Fatalf("an endpoints-only change took a full rewrite (%v, %v)", ok, err)
	}
	tbl.last = &Ruleset{Services: append([]ServicePort(nil), rs.Services...), HostPorts: rs.HostPorts}
	want["svc-ns/svc-0/http/tcp"] = 2
	if got := chains(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after an endpoints change:\n got %v\nwant %v", got, want)
	}
	rs.Services[0].Endpoints = nil // its last endpoint gone: the dispatch rules change
	if ok, _ := tbl.applyEndpoints(rs); ok {
		t.Error("a service that lost its last endpoint was rewritten in place")
	}
	if err := tbl.apply(Ruleset{}); err != nil {
		t.Fatal(err)
	}
	if got := chains(); len(got) != 9 {
		t.Errorf("after an empty rewrite: %v, want the 9 fixed chains", got)
	}
	if err := removeTable(tbl.conn, "wasmkube-test"); err != nil {
		t.Fatal(err)
	}
	if got := chains(); len(got) != 0 {
		t.Errorf("after remove: %v", got)
	}
}

// BenchmarkProgramRules puts one Endpoints change (a pod turned unready, then ready) in
// force on a table of 1000 Services x 10 endpoints (a NodePort each), in a namespace of
// its own; BenchmarkProgramRulesFull rewrites the whole table (a Service came or went).
func BenchmarkProgramRules(b *testing.B)     { benchProgram(b, false) }
func BenchmarkProgramRulesFull(b *testing.B) { benchProgram(b, true) }

func benchProgram(b *testing.B, full bool) {
	opt := testNetns(b)
	tbl, err := newTable("wasmkube-bench", testNet, opt)
	if err != nil {
		b.Fatal(err)
	}
	rs := bigRuleset(1000, 10)
	if err := tbl.apply(rs); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if full {
			tbl.last = nil
		}
		sp := &rs.Services[i%1000]
		all := sp.Endpoints
		sp.Endpoints = all[1:]
		if err := tbl.apply(rs); err != nil {
			b.Fatal(err)
		}
		sp.Endpoints = all
		if err := tbl.apply(rs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(2*b.N), "ms/change")
}
