package dns

import (
	"strings"
	"testing"

	mdns "github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type objects struct {
	svcs map[string]*v1.Service
	eps  map[string][]*discoveryv1.EndpointSlice
}

func (o objects) Service(ns, name string) *v1.Service { return o.svcs[ns+"/"+name] }
func (o objects) EndpointSlices(ns, name string) []*discoveryv1.EndpointSlice {
	return o.eps[ns+"/"+name]
}

func ptr[T any](v T) *T { return &v }

func TestResolve(t *testing.T) {
	objs := objects{
		svcs: map[string]*v1.Service{
			"default/web": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.0.10",
				Ports: []v1.ServicePort{{Name: "http", Port: 80}}}},
			"default/db": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"}, Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone,
				Ports: []v1.ServicePort{{Name: "pg", Port: 5432}}}},
			"default/ext": {ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.org"}},
		},
		eps: map[string][]*discoveryv1.EndpointSlice{
			"default/db": {
				{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr("pg"), Port: ptr(int32(5433))}},
					Endpoints: []discoveryv1.Endpoint{
						{Addresses: []string{"10.42.0.8"}, Hostname: ptr("db-0"), Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
						{Addresses: []string{"10.42.0.9"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(false)}},
					}},
				// A second slice of the same Service; ready unset counts as ready.
				{AddressType: discoveryv1.AddressTypeIPv4, Ports: []discoveryv1.EndpointPort{{Name: ptr("pg"), Port: ptr(int32(5433))}},
					Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.7"}}}},
			},
		},
	}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		want  []string // answers, as text after the header
		extra int
	}{
		{"web.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.96.0.10"}, 0},
		{"WEB.Default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.96.0.10"}, 0},
		{"web.default.svc.cluster.local.", mdns.TypeAAAA, mdns.RcodeSuccess, nil, 0},
		{"nosuch.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, 0},
		{"web.other.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, 0},
		{"db.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.0.7", "10.42.0.8"}, 0},
		{"db-0.db.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.0.8"}, 0},
		{"10-42-0-7.db.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.0.7"}, 0},
		{"10-42-0-9.db.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, 0}, // not ready
		{"_http._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeSuccess, []string{"0 100 80 web.default.svc.cluster.local."}, 1},
		{"_pg._tcp.db.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeSuccess,
			[]string{"0 100 5433 10-42-0-7.db.default.svc.cluster.local.", "0 100 5433 db-0.db.default.svc.cluster.local."}, 2},
		{"_nope._tcp.web.default.svc.cluster.local.", mdns.TypeSRV, mdns.RcodeNameError, nil, 0},
		{"ext.default.svc.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"example.org."}, 0},
		{"10-42-0-5.default.pod.cluster.local.", mdns.TypeA, mdns.RcodeSuccess, []string{"10.42.0.5"}, 0},
		{"cluster.local.", mdns.TypeSOA, mdns.RcodeSuccess, nil, 0},
		{"foo.cluster.local.", mdns.TypeA, mdns.RcodeNameError, nil, 0},
	} {
		ans, extra, rcode, ok := Resolve(objs, "cluster.local", mdns.Question{Name: tc.name, Qtype: tc.qtype, Qclass: mdns.ClassINET})
		if !ok || rcode != tc.rcode || len(extra) != tc.extra {
			t.Errorf("%s %s: ok %v rcode %d extra %d, want rcode %d extra %d", tc.name, mdns.TypeToString[tc.qtype], ok, rcode, len(extra), tc.rcode, tc.extra)
			continue
		}
		var got []string
		for _, rr := range ans {
			f := strings.Split(rr.String(), "\t")
			got = append(got, f[len(f)-1])
			if rr.Header().Name != tc.name || rr.Header().Ttl != TTL {
				t.Errorf("%s: answer header %+v", tc.name, rr.Header())
			}
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s %s: %q, want %q", tc.name, mdns.TypeToString[tc.qtype], got, tc.want)
		}
	}
	if _, _, _, ok := Resolve(objs, "cluster.local", mdns.Question{Name: "example.org.", Qtype: mdns.TypeA}); ok {
		t.Error("a name outside the zone was answered, not forwarded")
	}
}

func TestResolvConf(t *testing.T) {
	two := "2"
	got := string(ResolvConf("10.42.0.1", "", "shop", &v1.PodDNSConfig{Searches: []string{"corp.example"},
		Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}}))
	want := "search shop.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.42.0.1\noptions ndots:2 edns0\n"
	if got != want {
		t.Errorf("ResolvConf:\n%s\nwant\n%s", got, want)
	}
	if got := string(NoneResolvConf(&v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}})); got != "nameserver 1.1.1.1\n" {
		t.Errorf("NoneResolvConf: %q", got)
	}
}
