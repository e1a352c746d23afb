// Package dns is the node's cluster DNS server: it answers the cluster domain
// (cluster.local) from the API's Services and EndpointSlices, as CoreDNS' kubernetes plugin
// does, and forwards other names to the host's resolvers. The kubelet runs it on the pod
// bridge's gateway address and names that address in its pods' resolv.conf. Built on
// github.com/miekg/dns (CoreDNS' own wire library). See docs/proxy.md.
package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	mdns "github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/internal/freebind"
)

// DefaultDomain is the cluster domain.
const DefaultDomain = "cluster.local"

// Options configure a Server.
type Options struct {
	// Addr is host:port to serve on, UDP and TCP. The address need not exist yet (the
	// bridge gets its gateway address with the node's first pod): the sockets are bound
	// with IP_FREEBIND and answer once it does.
	Addr   string
	Domain string // default DefaultDomain
	// Upstreams are resolvers (host:port) for names outside the domain; none: those are
	// REFUSED.
	Upstreams []string
	Services  informers.SharedInformerFactory
	Logger    *slog.Logger
}

// Server is a running cluster DNS server.
type Server struct {
	opts   Options
	log    *slog.Logger
	svcs   corelisters.ServiceLister
	eps    discoverylisters.EndpointSliceLister
	synced []cache.InformerSynced
	client *mdns.Client
}

// New registers the informers it reads (start the factory after).
func New(opts Options) (*Server, error) {
	if opts.Services == nil || opts.Addr == "" {
		return nil, errors.New("dns: Addr and Services are required")
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("dns: address %q: %w", opts.Addr, err)
	}
	if opts.Domain == "" {
		opts.Domain = DefaultDomain
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	si, ei := opts.Services.Core().V1().Services(), opts.Services.Discovery().V1().EndpointSlices()
	s := &Server{opts: opts, log: opts.Logger.With("component", "dns", "addr", opts.Addr),
		svcs: si.Lister(), eps: ei.Lister(), synced: []cache.InformerSynced{si.Informer().HasSynced, ei.Informer().HasSynced},
		client: &mdns.Client{Timeout: 2 * time.Second}}
	return s, nil
}

// Service implements Objects on the listers.
func (s *Server) Service(ns, name string) *v1.Service {
	svc, err := s.svcs.Services(ns).Get(name)
	if err != nil {
		return nil
	}
	return svc
}

// EndpointSlices implements Objects on the listers.
func (s *Server) EndpointSlices(ns, name string) []*discoveryv1.EndpointSlice {
	l, err := s.eps.EndpointSlices(ns).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return nil
	}
	return l
}

// Listen binds the UDP and TCP sockets; Run serves them. Split so that a caller learns of a
// port already taken before it writes pods' resolv.conf.
func (s *Server) Listen() (net.PacketConn, net.Listener, error) {
	lc := net.ListenConfig{Control: freebind.Control}
	pc, err := lc.ListenPacket(context.Background(), "udp4", s.opts.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("dns: listen udp %s: %w", s.opts.Addr, err)
	}
	ln, err := lc.Listen(context.Background(), "tcp4", s.opts.Addr)
	if err != nil {
		pc.Close()
		return nil, nil, fmt.Errorf("dns: listen tcp %s: %w", s.opts.Addr, err)
	}
	return pc, ln, nil
}

// Run serves on pc and ln until ctx ends.
func (s *Server) Run(ctx context.Context, pc net.PacketConn, ln net.Listener) {
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		pc.Close()
		ln.Close()
		return
	}
	h := mdns.HandlerFunc(s.serveDNS)
	servers := []*mdns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}}
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.ActivateAndServe(); err != nil && ctx.Err() == nil {
				s.log.Error("dns server", "err", err)
			}
		}()
	}
	s.log.Info("cluster DNS serving", "domain", s.opts.Domain, "upstreams", s.opts.Upstreams)
	<-ctx.Done()
	for _, srv := range servers {
		_ = srv.Shutdown()
	}
	wg.Wait()
}

func (s *Server) serveDNS(w mdns.ResponseWriter, req *mdns.Msg) {
	m := new(mdns.Msg)
	if len(req.Question) != 1 {
		m.SetRcode(req, mdns.RcodeFormatError)
		_ = w.WriteMsg(m)
		return
	}
	q := req.Question[0]
	answer, extra, rcode, ok := Resolve(s, s.opts.Domain, q)
	if !ok {
		s.forward(w, req)
		return
	}
	m.SetRcode(req, rcode)
	m.Authoritative = true
	m.RecursionAvailable = true
	m.Answer, m.Extra = answer, extra
	if len(answer) == 0 {
		m.Ns = []mdns.RR{s.soa()}
	}
	if _, isUDP := w.RemoteAddr().(*net.UDPAddr); isUDP {
		size := 512
		if o := req.IsEdns0(); o != nil {
			size = int(o.UDPSize())
		}
		m.Truncate(size)
	}
	_ = w.WriteMsg(m)
}

func (s *Server) soa() mdns.RR {
	zone := mdns.Fqdn(strings.ToLower(s.opts.Domain))
	return &mdns.SOA{Hdr: mdns.RR_Header{Name: zone, Rrtype: mdns.TypeSOA, Class: mdns.ClassINET, Ttl: TTL},
		Ns: "ns.dns." + zone, Mbox: "hostmaster." + zone, Serial: uint32(time.Now().Unix()),
		Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}
}

// forward passes a name outside the cluster domain to the upstreams in turn.
func (s *Server) forward(w mdns.ResponseWriter, req *mdns.Msg) {
	network := "udp"
	if _, isTCP := w.RemoteAddr().(*net.TCPAddr); isTCP {
		network = "tcp"
	}
	for _, up := range s.opts.Upstreams {
		c := *s.client
		c.Net = network
		resp, _, err := c.Exchange(req, up)
		if err == nil && resp != nil {
			resp.Id = req.Id
			_ = w.WriteMsg(resp)
			return
		}
		s.log.Debug("upstream failed", "upstream", up, "name", req.Question[0].Name, "err", err)
	}
	m := new(mdns.Msg)
	if len(s.opts.Upstreams) == 0 {
		m.SetRcode(req, mdns.RcodeRefused)
	} else {
		m.SetRcode(req, mdns.RcodeServerFailure)
	}
	_ = w.WriteMsg(m)
}

// ResolvConf is the resolv.conf of a pod in namespace ns with dnsPolicy ClusterFirst: the
// server, the search path upstream's kubelet writes, and ndots:5 (so `web` and `web.ns`
// are tried in the cluster domain first). The pod's dnsConfig adds to it.
func ResolvConf(nameserver, domain, ns string, cfg *v1.PodDNSConfig) []byte {
	if domain == "" {
		domain = DefaultDomain
	}
	servers := []string{nameserver}
	search := []string{ns + ".svc." + domain, "svc." + domain, domain}
	opts := []string{"ndots:5"}
	if cfg != nil {
		servers = append(servers, cfg.Nameservers...)
		search = append(search, cfg.Searches...)
		for _, o := range cfg.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			opts = mergeOption(opts, opt)
		}
	}
	return renderResolvConf(servers, search, opts)
}

// mergeOption adds opt, replacing an option of the same name (ndots:2 replaces ndots:5).
func mergeOption(opts []string, opt string) []string {
	name, _, _ := strings.Cut(opt, ":")
	for i, o := range opts {
		if n, _, _ := strings.Cut(o, ":"); n == name {
			opts[i] = opt
			return opts
		}
	}
	return append(opts, opt)
}

func renderResolvConf(servers, search, opts []string) []byte {
	var b strings.Builder
	if len(search) > 0 {
		b.WriteString("search " + strings.Join(search, " ") + "\n")
	}
	for i, s := range servers {
		if i == 3 {
			break // resolvers read at most three
		}
		b.WriteString("nameserver " + s + "\n")
	}
	if len(opts) > 0 {
		b.WriteString("options " + strings.Join(opts, " ") + "\n")
	}
	return []byte(b.String())
}

// NoneResolvConf is the resolv.conf of a pod with dnsPolicy None: its dnsConfig alone.
func NoneResolvConf(cfg *v1.PodDNSConfig) []byte {
	if cfg == nil {
		return []byte{}
	}
	var opts []string
	for _, o := range cfg.Options {
		opt := o.Name
		if o.Value != nil {
			opt += ":" + *o.Value
		}
		opts = mergeOption(opts, opt)
	}
	return renderResolvConf(cfg.Nameservers, cfg.Searches, opts)
}

// HostUpstreams are the nameservers of the host's resolv.conf, as host:53.
func HostUpstreams(resolvConf string) []string {
	cfg, err := mdns.ClientConfigFromFile(resolvConf)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range cfg.Servers {
		out = append(out, net.JoinHostPort(s, cfg.Port))
	}
	return out
}
