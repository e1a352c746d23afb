package proxy

import (
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Ruleset is everything the node's table holds, computed from the API's objects by Plan.
// It is a value (no I/O), so what the proxy programs can be table-tested.
type Ruleset struct {
	Services  []ServicePort // sorted by Name
	HostPorts []HostPort    // sorted by Pod, then port
}

// ServicePort is one port of a Service with a cluster IP, and the ready endpoints that serve it.
type ServicePort struct {
	Name      string // namespace/service/port-name-or-number/protocol, unique; names the chain
	ClusterIP string // empty for a headless Service (then only NodePort would apply, and it has none)
	Protocol  v1.Protocol
	Port      int32
	NodePort  int32 // 0: none
	// ExternalIPs are addresses the port also answers on, whatever the node: the
	// Service's spec.externalIPs and a LoadBalancer's status.loadBalancer.ingress IPs
	// (the nodes' addresses, core/controller/servicelb). Sorted.
	ExternalIPs []string
	// Affinity is the ClientIP affinity timeout; 0 is sessionAffinity None.
	Affinity  time.Duration
	Endpoints []Endpoint // ready endpoints only, sorted
}

// Endpoint is a backend of a ServicePort.
type Endpoint struct {
	IP   string
	Port int32
}

// HostPort is a container port published on the node (spec.containers[].ports[].hostPort).
type HostPort struct {
	Pod           string // namespace/name
	HostIP        string // empty: every node address the proxy serves
	Protocol      v1.Protocol
	HostPort      int32
	PodIP         string
	ContainerPort int32
}

// Plan computes the Ruleset for services, their EndpointSlices (written by the
// EndpointSlice controller, core/controller/endpointslice, or mirrored from a selector-less
// Service's Endpoints) and the node's pods. Every endpoint is programmed wherever its pod
// runs: the node's pods matter only for hostPorts. Backends are the ready endpoints (a
// failing readiness probe or a terminating pod is not); when a port has none, the serving
// terminating ones, as kube-proxy does, so a rollout's last pods finish their work.
func Plan(services []*v1.Service, slices []*discoveryv1.EndpointSlice, pods []*v1.Pod) Ruleset {
	eps := map[string][]*discoveryv1.EndpointSlice{}
	for _, es := range slices {
		name := es.Labels[discoveryv1.LabelServiceName]
		if name == "" || es.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		eps[es.Namespace+"/"+name] = append(eps[es.Namespace+"/"+name], es)
	}
	var rs Ruleset
	for _, svc := range services {
		switch svc.Spec.Type {
		case v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort, v1.ServiceTypeLoadBalancer, "":
		default:
			continue // ExternalName: DNS only
		}
		clusterIP := svc.Spec.ClusterIP
		if clusterIP == v1.ClusterIPNone || net.ParseIP(clusterIP).To4() == nil {
			clusterIP = ""
		}
		var affinity time.Duration
		if svc.Spec.SessionAffinity == v1.ServiceAffinityClientIP {
			affinity = 3 * time.Hour // upstream's default (10800 s)
			if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
				affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
			}
		}
		external := externalIPs(svc)
		for _, sp := range svc.Spec.Ports {
			proto := sp.Protocol
			if proto == "" {
				proto = v1.ProtocolTCP
			}
			if clusterIP == "" && sp.NodePort == 0 && len(external) == 0 {
				continue
			}
			portName := sp.Name
			if portName == "" {
				portName = fmt.Sprint(sp.Port)
			}
			p := ServicePort{
				Name:      strings.Join([]string{svc.Namespace, svc.Name, portName, strings.ToLower(string(proto))}, "/"),
				ClusterIP: clusterIP, Protocol: proto, Port: sp.Port, NodePort: sp.NodePort, ExternalIPs: external, Affinity: affinity,
				Endpoints: readyEndpoints(eps[svc.Namespace+"/"+svc.Name], sp.Name, proto),
			}
			rs.Services = append(rs.Services, p)
		}
	}
	sort.Slice(rs.Services, func(i, j int) bool { return rs.Services[i].Name < rs.Services[j].Name })
	for _, pod := range pods {
		if pod.Status.PodIP == "" || pod.Spec.HostNetwork || pod.DeletionTimestamp != nil ||
			pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		for _, c := range pod.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.HostPort == 0 {
					continue
				}
				proto := cp.Protocol
				if proto == "" {
					proto = v1.ProtocolTCP
				}
				hostIP := cp.HostIP
				if hostIP == "0.0.0.0" {
					hostIP = ""
				}
				rs.HostPorts = append(rs.HostPorts, HostPort{Pod: pod.Namespace + "/" + pod.Name, HostIP: hostIP, Protocol: proto,
					HostPort: cp.HostPort, PodIP: pod.Status.PodIP, ContainerPort: cp.ContainerPort})
			}
		}
	}
	sort.Slice(rs.HostPorts, func(i, j int) bool {
		a, b := rs.HostPorts[i], rs.HostPorts[j]
		if a.Pod != b.Pod {
			return a.Pod < b.Pod
		}
		return a.HostPort < b.HostPort
	})
	return rs
}

// externalIPs are the IPv4 addresses svc answers on besides its cluster IP: spec.externalIPs
// and, for a LoadBalancer, the ingress IPs whose ipMode is VIP (or unset); ipMode Proxy
// means a load balancer in front rewrites the address, as upstream's proxy reads it.
func externalIPs(svc *v1.Service) []string {
	seen := map[string]bool{}
	var out []string
	add := func(ip string) {
		if net.ParseIP(ip).To4() != nil && !seen[ip] {
			seen[ip] = true
			out = append(out, ip)
		}
	}
	for _, ip := range svc.Spec.ExternalIPs {
		add(ip)
	}
	if svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IPMode == nil || *in.IPMode == v1.LoadBalancerIPModeVIP {
				add(in.IP)
			}
		}
	}
	sort.Strings(out)
	return out
}

// readyEndpoints are the backends of the service port named portName with proto in the
// Service's slices (the controller copies the service's port names): the ready endpoints,
// or if there are none the serving terminating ones.
func readyEndpoints(slices []*discoveryv1.EndpointSlice, portName string, proto v1.Protocol) []Endpoint {
	var ready, terminating []Endpoint
	seen := map[Endpoint]bool{}
	for _, es := range slices {
		for _, p := range es.Ports {
			name, pproto := "", v1.ProtocolTCP
			if p.Name != nil {
				name = *p.Name
			}
			if p.Protocol != nil {
				pproto = *p.Protocol
			}
			if name != portName || pproto != proto || p.Port == nil {
				continue
			}
			for _, ep := range es.Endpoints {
				c := ep.Conditions
				isReady := c.Ready == nil || *c.Ready // unset is ready, as upstream reads it
				isTerminatingServing := c.Terminating != nil && *c.Terminating && c.Serving != nil && *c.Serving
				if !isReady && !isTerminatingServing {
					continue
				}
				for _, a := range ep.Addresses {
					if net.ParseIP(a).To4() == nil {
						continue
					}
					e := Endpoint{IP: a, Port: *p.Port}
					if seen[e] {
						continue
					}
					seen[e] = true
					if isReady {
						ready = append(ready, e)
					} else {
						terminating = append(terminating, e)
					}
				}
			}
		}
	}
	out := ready
	if len(out) == 0 {
		out = terminating
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].IP != out[j].IP {
			return out[i].IP < out[j].IP
		}
		return out[i].Port < out[j].Port
	})
	return out
}
