package dns

import (
	"net"
	"sort"
	"strings"

	mdns "github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// TTL of every answer, in seconds (CoreDNS' kubernetes plugin default): short, since
// endpoints come and go with pods.
const TTL = 5

// Objects is what the resolver reads: the API's Services and EndpointSlices (informer
// listers in the server, maps in tests). EndpointSlices returns the slices labelled
// kubernetes.io/service-name=name.
type Objects interface {
	Service(namespace, name string) *v1.Service
	EndpointSlices(namespace, name string) []*discoveryv1.EndpointSlice
}

// Resolve answers one question about the cluster domain, following the Kubernetes DNS
// spec (https://github.com/kubernetes/dns/blob/master/docs/specification.md):
//   - <svc>.<ns>.svc.<zone> A: the cluster IP; for a headless Service the ready endpoints'
//     IPs; an ExternalName Service is a CNAME to its externalName
//   - <hostname>.<svc>.<ns>.svc.<zone> A: a headless Service's endpoint (hostname, or its
//     IP with dashes)
//   - _<port>._<proto>.<svc>.<ns>.svc.<zone> SRV: a named port (one record per endpoint for
//     a headless Service)
//   - <a-b-c-d>.<ns>.pod.<zone> A: a-b-c-d as an address
//
// ok is false for names outside the zone (the server forwards those). A name in the zone
// that does not exist is NXDOMAIN; one that exists without records of qtype is an empty
// NOERROR answer.
func Resolve(objs Objects, zone string, q mdns.Question) (answer, extra []mdns.RR, rcode int, ok bool) {
	zone = mdns.Fqdn(strings.ToLower(zone))
	name := strings.ToLower(mdns.Fqdn(q.Name))
	if name != zone && !strings.HasSuffix(name, "."+zone) {
		return nil, nil, 0, false
	}
	if name == zone || name == "svc."+zone || name == "pod."+zone {
		return nil, nil, mdns.RcodeSuccess, true // the zone itself and its two subdomains exist
	}
	labels := mdns.SplitDomainName(strings.TrimSuffix(name, "."+zone))
	n := len(labels)
	hdr := func(t uint16) mdns.RR_Header {
		return mdns.RR_Header{Name: q.Name, Rrtype: t, Class: mdns.ClassINET, Ttl: TTL}
	}
	a := func(ip string) mdns.RR {
		return &mdns.A{Hdr: hdr(mdns.TypeA), A: net.ParseIP(ip).To4()}
	}
	switch {
	case n >= 2 && labels[n-1] == "pod":
		if n != 3 {
			return nil, nil, mdns.RcodeNameError, true
		}
		ip := net.ParseIP(strings.ReplaceAll(labels[0], "-", ".")).To4()
		if ip == nil {
			return nil, nil, mdns.RcodeNameError, true
		}
		if q.Qtype == mdns.TypeA || q.Qtype == mdns.TypeANY {
			return []mdns.RR{a(ip.String())}, nil, mdns.RcodeSuccess, true
		}
		return nil, nil, mdns.RcodeSuccess, true
	case n < 2 || labels[n-1] != "svc":
		return nil, nil, mdns.RcodeNameError, true
	case n == 2: // <ns>.svc: exists when something lives in it; we cannot cheaply tell, so say it exists
		return nil, nil, mdns.RcodeSuccess, true
	}
	ns, svcName := labels[n-2], labels[n-3]
	svc := objs.Service(ns, svcName)
	if svc == nil {
		return nil, nil, mdns.RcodeNameError, true
	}
	svcFQDN := svcName + "." + ns + ".svc." + zone
	headless := svc.Spec.ClusterIP == v1.ClusterIPNone
	slices := objs.EndpointSlices(ns, svcName)
	eps := readyAddresses(slices)
	switch n {
	case 3: // <svc>.<ns>.svc
		switch {
		case svc.Spec.Type == v1.ServiceTypeExternalName:
			if q.Qtype == mdns.TypeAAAA {
				return nil, nil, mdns.RcodeSuccess, true
			}
			return []mdns.RR{&mdns.CNAME{Hdr: hdr(mdns.TypeCNAME), Target: mdns.Fqdn(svc.Spec.ExternalName)}}, nil, mdns.RcodeSuccess, true
		case q.Qtype != mdns.TypeA && q.Qtype != mdns.TypeANY:
			return nil, nil, mdns.RcodeSuccess, true
		case headless:
			for _, e := range eps {
				answer = append(answer, a(e.IP))
			}
			return answer, nil, mdns.RcodeSuccess, true
		case net.ParseIP(svc.Spec.ClusterIP).To4() != nil:
			return []mdns.RR{a(svc.Spec.ClusterIP)}, nil, mdns.RcodeSuccess, true
		}
		return nil, nil, mdns.RcodeSuccess, true
	case 4: // <hostname>.<svc>.<ns>.svc: a headless Service's endpoint
		if !headless {
			return nil, nil, mdns.RcodeNameError, true
		}
		for _, e := range eps {
			if endpointHostname(e) == labels[0] {
				if q.Qtype == mdns.TypeA || q.Qtype == mdns.TypeANY {
					return []mdns.RR{a(e.IP)}, nil, mdns.RcodeSuccess, true
				}
				return nil, nil, mdns.RcodeSuccess, true
			}
		}
		return nil, nil, mdns.RcodeNameError, true
	case 5: // _<port>._<proto>.<svc>.<ns>.svc
		portName, proto := strings.TrimPrefix(labels[0], "_"), strings.TrimPrefix(labels[1], "_")
		if !strings.HasPrefix(labels[0], "_") || !strings.HasPrefix(labels[1], "_") {
			return nil, nil, mdns.RcodeNameError, true
		}
		var port *v1.ServicePort
		for i, sp := range svc.Spec.Ports {
			p := sp.Protocol
			if p == "" {
				p = v1.ProtocolTCP
			}
			if sp.Name != "" && strings.ToLower(sp.Name) == portName && strings.ToLower(string(p)) == proto {
				port = &svc.Spec.Ports[i]
			}
		}
		if port == nil {
			return nil, nil, mdns.RcodeNameError, true
		}
		if q.Qtype != mdns.TypeSRV && q.Qtype != mdns.TypeANY {
			return nil, nil, mdns.RcodeSuccess, true
		}
		srv := func(target string, p int32) mdns.RR {
			return &mdns.SRV{Hdr: hdr(mdns.TypeSRV), Priority: 0, Weight: 100, Port: uint16(p), Target: target}
		}
		if !headless {
			answer = []mdns.RR{srv(svcFQDN, port.Port)}
			if ip := net.ParseIP(svc.Spec.ClusterIP).To4(); ip != nil {
				extra = []mdns.RR{&mdns.A{Hdr: mdns.RR_Header{Name: svcFQDN, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: TTL}, A: ip}}
			}
			return answer, extra, mdns.RcodeSuccess, true
		}
		for _, e := range eps {
			p, ok := endpointPort(slices, e.IP, port.Name)
			if !ok {
				continue
			}
			target := endpointHostname(e) + "." + svcFQDN
			answer = append(answer, srv(target, p))
			extra = append(extra, &mdns.A{Hdr: mdns.RR_Header{Name: target, Rrtype: mdns.TypeA, Class: mdns.ClassINET, Ttl: TTL}, A: net.ParseIP(e.IP).To4()})
		}
		return answer, extra, mdns.RcodeSuccess, true
	}
	return nil, nil, mdns.RcodeNameError, true
}

// address is one ready endpoint address of a Service.
type address struct {
	IP, Hostname string
}

// readyAddresses are the IPv4 addresses of the ready endpoints (ready unset counts as
// ready, as upstream) of every slice, sorted by IP, each once.
func readyAddresses(slices []*discoveryv1.EndpointSlice) []address {
	seen := map[string]bool{}
	var out []address
	for _, es := range slices {
		if es.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		for _, ep := range es.Endpoints {
			if r := ep.Conditions.Ready; r != nil && !*r {
				continue
			}
			for _, ip := range ep.Addresses {
				if net.ParseIP(ip).To4() != nil && !seen[ip] {
					seen[ip] = true
					a := address{IP: ip}
					if ep.Hostname != nil {
						a.Hostname = *ep.Hostname
					}
					out = append(out, a)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].IP < out[j].IP })
	return out
}

// endpointPort is the port named name of the slice holding ip.
func endpointPort(slices []*discoveryv1.EndpointSlice, ip, name string) (int32, bool) {
	for _, es := range slices {
		for _, ep := range es.Endpoints {
			for _, a := range ep.Addresses {
				if a != ip {
					continue
				}
				for _, p := range es.Ports {
					if p.Port != nil && (p.Name != nil && *p.Name == name || p.Name == nil && name == "") {
						return *p.Port, true
					}
				}
			}
		}
	}
	return 0, false
}

// endpointHostname is the endpoint's DNS label: its hostname (a pod's spec.hostname with a
// matching subdomain), else its IP with dashes.
func endpointHostname(a address) string {
	if a.Hostname != "" {
		return strings.ToLower(a.Hostname)
	}
	return strings.ReplaceAll(a.IP, ".", "-")
}
