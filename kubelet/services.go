package kubelet

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/kubelet/dns"
	"github.com/wasmkube/wasmkube/kubelet/netpol"
	"github.com/wasmkube/wasmkube/kubelet/proxy"
)

// services is what the kubelet runs for Services: the node proxy (kubelet/proxy), the
// NetworkPolicy enforcer (kubelet/netpol), the cluster DNS server (kubelet/dns) and the lister that service environment variables come
// from. The proxy and DNS run only with the real network (containerd + CNI).
type services struct {
	factory informers.SharedInformerFactory
	// policies is the NetworkPolicy enforcer's, on its own credential (cluster-wide pods,
	// namespaces and policies); nil without the enforcer.
	policies informers.SharedInformerFactory
	lister   corelisters.ServiceLister
	synced   cache.InformerSynced
	proxy    *proxy.Proxy
	netpol   *netpol.Enforcer
	dns      *dns.Server
	dnsAddr  string // the nameserver pods get; empty: pods get the host's resolv.conf
	domain   string
}

// GatewayIP is the first address of the pod subnet, which the bridge plugin gives the
// bridge (isGateway): the node as its pods see it. The node's DNS server answers there,
// and under `wasmkube up` the API server too.
func GatewayIP(podCIDR string) (string, error) {
	_, n, err := net.ParseCIDR(podCIDR)
	if err != nil || n.IP.To4() == nil {
		return "", fmt.Errorf("pod CIDR %q is not an IPv4 CIDR", podCIDR)
	}
	ip := n.IP.To4()
	gw := net.IPv4(ip[0], ip[1], ip[2], ip[3]+1)
	return gw.String(), nil
}

// setupServices creates the Service informers and, on a real network, the proxy and the
// DNS server. nodePods is the kubelet's informer of its pods (for hostPorts).
func (k *Kubelet) setupServices(nodePods cache.SharedIndexInformer) error {
	s := &services{factory: informers.NewSharedInformerFactory(k.client, 0), domain: k.opts.ClusterDomain}
	if s.domain == "" {
		s.domain = dns.DefaultDomain
	}
	si := s.factory.Core().V1().Services()
	s.lister, s.synced = si.Lister(), si.Informer().HasSynced
	k.svc = s
	if k.net == nil || k.opts.DisableServiceProxy {
		return nil
	}
	gw, err := GatewayIP(k.podCIDR)
	if err != nil {
		return err
	}
	bridge := k.opts.Bridge
	if bridge == "" {
		bridge = "wasmkube0"
	}
	s.proxy, err = proxy.New(proxy.Options{
		Network: proxy.Network{Bridge: bridge, PodCIDR: k.podCIDR, ServiceCIDR: k.opts.ServiceCIDR,
			NodeIPs: []string{gw, k.opts.NodeIP}},
		Table: k.ProxyTable(), NodeName: k.opts.NodeName, Services: s.factory, NodePods: nodePods, Logger: k.log,
	})
	if err != nil {
		return err
	}
	// NetworkPolicy is enforced where the proxy runs: both filter the pod traffic of the
	// node's bridge and read cluster-wide informers (docs/networkpolicy.md).
	s.policies = informers.NewSharedInformerFactory(k.policyClient, 0)
	s.netpol, err = netpol.New(netpol.Options{Table: netpol.TableName(k.opts.RootDir), Informers: s.policies, Logger: k.log})
	if err != nil {
		return err
	}
	srv, err := dns.New(dns.Options{Addr: net.JoinHostPort(gw, "53"), Domain: s.domain, Upstreams: k.opts.DNSUpstreams,
		Services: s.factory, Logger: k.log})
	if err != nil {
		return err
	}
	s.dns, s.dnsAddr = srv, gw
	return nil
}

// ProxyTable is the name of the nftables table the node's proxy keeps: derived from the
// bridge and the root dir, so kubelets sharing a machine (tests, two clusters) never
// share one, and a restarted kubelet replaces what its predecessor left.
func (k *Kubelet) ProxyTable() string {
	bridge := k.opts.Bridge
	if bridge == "" {
		bridge = "wasmkube0"
	}
	return proxy.TableName(bridge, k.opts.RootDir)
}

// runServices starts the informers, the proxy and the DNS server; it returns when ctx ends
// and they have stopped (the proxy's table deleted).
func (s *services) run(ctx context.Context, k *Kubelet) {
	s.factory.Start(ctx.Done())
	if s.policies != nil {
		s.policies.Start(ctx.Done())
	}
	done := make(chan struct{}, 3)
	n := 0
	if s.dns != nil {
		pc, ln, err := s.dns.Listen()
		if err != nil {
			// Pods then get the host's resolv.conf, as without cluster DNS.
			k.log.Error("cluster DNS not started; pods get the host's resolv.conf", "err", err)
			s.dnsAddr = ""
		} else {
			n++
			go func() { s.dns.Run(ctx, pc, ln); done <- struct{}{} }()
		}
	}
	if s.proxy != nil {
		n++
		go func() { s.proxy.Run(ctx); done <- struct{}{} }()
	}
	if s.netpol != nil {
		n++
		go func() { s.netpol.Run(ctx); done <- struct{}{} }()
	}
	<-ctx.Done()
	for ; n > 0; n-- {
		<-done
	}
	s.factory.Shutdown()
	if s.policies != nil {
		s.policies.Shutdown()
	}
}

// podDomain is the domain of a pod with a subdomain (<subdomain>.<namespace>.svc.<cluster
// domain>, under which its headless Service publishes <hostname>), "" without one.
func (k *Kubelet) podDomain(pod *v1.Pod) string {
	if pod.Spec.Subdomain == "" {
		return ""
	}
	domain := k.opts.ClusterDomain
	if domain == "" {
		domain = dns.DefaultDomain
	}
	return pod.Spec.Subdomain + "." + pod.Namespace + ".svc." + domain
}

// resolvConf is the pod's /etc/resolv.conf by its dnsPolicy, as upstream's kubelet writes
// it; nil is the host's.
func (k *Kubelet) resolvConf(pod *v1.Pod) []byte {
	addr := ""
	if k.svc != nil {
		addr = k.svc.dnsAddr
	}
	policy := pod.Spec.DNSPolicy
	switch {
	case policy == v1.DNSNone:
		return dns.NoneResolvConf(pod.Spec.DNSConfig)
	case policy == v1.DNSDefault, addr == "":
		return nil
	case policy == v1.DNSClusterFirst && pod.Spec.HostNetwork, policy == "" && pod.Spec.HostNetwork:
		return nil // ClusterFirst on the host network means Default, upstream too
	}
	return dns.ResolvConf(addr, k.svc.domain, pod.Namespace, pod.Spec.DNSConfig)
}

// serviceEnv is the pod's service environment (see ServiceEnv) from the informer's cache;
// empty before it synced.
func (k *Kubelet) serviceEnv(pod *v1.Pod) []string {
	if k.svc == nil || !k.svc.synced() {
		return nil
	}
	all, err := k.svc.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return ServiceEnv(pod, all)
}

// ServiceEnv is the docker-links style environment upstream's kubelet gives a container for
// each Service with a cluster IP in its pod's namespace (only when enableServiceLinks is
// unset or true) and for the kubernetes Service of the default namespace (always):
// WEB_SERVICE_HOST, WEB_SERVICE_PORT, WEB_SERVICE_PORT_<NAME>, WEB_PORT,
// WEB_PORT_80_TCP, _PROTO, _PORT and _ADDR. A Service in the pod's own namespace wins
// over the default namespace's of the same name.
func ServiceEnv(pod *v1.Pod, all []*v1.Service) []string {
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	byName := map[string]*v1.Service{}
	for _, s := range all {
		ip := s.Spec.ClusterIP
		if ip == "" || ip == v1.ClusterIPNone {
			continue
		}
		switch {
		case s.Namespace == pod.Namespace && links:
			byName[s.Name] = s
		case s.Namespace == v1.NamespaceDefault && s.Name == "kubernetes":
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var env []string
	for _, n := range names {
		s := byName[n]
		if len(s.Spec.Ports) == 0 {
			continue
		}
		prefix := strings.ToUpper(strings.ReplaceAll(s.Name, "-", "_"))
		ip := s.Spec.ClusterIP
		env = append(env, prefix+"_SERVICE_HOST="+ip, fmt.Sprintf("%s_SERVICE_PORT=%d", prefix, s.Spec.Ports[0].Port))
		for _, p := range s.Spec.Ports {
			if p.Name != "" {
				env = append(env, fmt.Sprintf("%s_SERVICE_PORT_%s=%d", prefix, strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_")), p.Port))
			}
		}
		first := s.Spec.Ports[0]
		env = append(env, fmt.Sprintf("%s_PORT=%s://%s", prefix, protoLower(first.Protocol), net.JoinHostPort(ip, fmt.Sprint(first.Port))))
		for _, p := range s.Spec.Ports {
			proto := protoLower(p.Protocol)
			pfx := fmt.Sprintf("%s_PORT_%d_%s", prefix, p.Port, strings.ToUpper(proto))
			env = append(env, pfx+"="+proto+"://"+net.JoinHostPort(ip, fmt.Sprint(p.Port)),
				pfx+"_PROTO="+proto, fmt.Sprintf("%s_PORT=%d", pfx, p.Port), pfx+"_ADDR="+ip)
		}
	}
	return env
}

func protoLower(p v1.Protocol) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(string(p))
}

// withServiceEnv puts the service variables under the container's own: a variable the
// container defines wins, as upstream.
func withServiceEnv(svcEnv, env []string) []string {
	if len(svcEnv) == 0 {
		return env
	}
	own := map[string]bool{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		own[k] = true
	}
	out := make([]string, 0, len(svcEnv)+len(env))
	for _, e := range svcEnv {
		if k, _, _ := strings.Cut(e, "="); !own[k] {
			out = append(out, e)
		}
	}
	return append(out, env...)
}
