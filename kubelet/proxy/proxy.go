// Package proxy is the node's service proxy: what kube-proxy's nftables mode does, inside
// the kubelet process. It watches Services, EndpointSlices and the node's pods and keeps one
// nftables table of its own that sends ClusterIP, NodePort and hostPort traffic to ready
// endpoints (DNAT, chosen at random or by client IP), and refuses anything else addressed
// to the service range so it never reaches the default route. See docs/proxy.md.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/nftables"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/wasmkube/wasmkube/kubelet/internal/syncloop"
)

// DefaultServiceCIDR is the API server's default service range (core/apiserver's
// DefaultServiceCIDR; repeated here so the node agent does not import the API server).
const DefaultServiceCIDR = "10.96.0.0/16"

// Options configure a Proxy.
type Options struct {
	Network
	// Table is the nftables table's name; default TableName(Bridge, PodCIDR).
	Table string
	// NodeName selects the pods whose hostPorts this node publishes.
	NodeName string
	// Services and EndpointSlices come from a cluster-wide informer factory; Pods from one
	// that lists the node's pods (the kubelet's).
	Services informers.SharedInformerFactory
	NodePods cache.SharedIndexInformer
	Logger   *slog.Logger
	// MinSyncInterval spaces table rewrites under a burst of changes; default 20 ms.
	MinSyncInterval time.Duration
}

// Proxy keeps the node's table in step with the API.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	tbl     *table
	svcs    corelisters.ServiceLister
	eps     discoverylisters.EndpointSliceLister
	pods    cache.Indexer
	synced  []cache.InformerSynced
	changed chan struct{}

	mu      sync.Mutex
	last    time.Time // when the table last matched the API
	applied int       // rewrites so far
}

// New checks the options and registers its handlers on the informers (start them after).
func New(opts Options) (*Proxy, error) {
	if opts.Services == nil || opts.NodePods == nil {
		return nil, errors.New("proxy: Services and NodePods informers are required")
	}
	if opts.ServiceCIDR == "" {
		opts.ServiceCIDR = DefaultServiceCIDR
	}
	if opts.Table == "" {
		opts.Table = TableName(opts.Bridge, opts.PodCIDR)
	}
	if opts.MinSyncInterval == 0 {
		opts.MinSyncInterval = 20 * time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if !opts.MasqueradeAll && !bridgeNetfilter() {
		opts.MasqueradeAll = true
		opts.Logger.Warn("proxy: br_netfilter is off (net.bridge.bridge-nf-call-iptables); masquerading all service traffic from pods so replies between pods of one bridge pass conntrack")
	}
	tbl, err := newTable(opts.Table, opts.Network)
	if err != nil {
		return nil, err
	}
	p := &Proxy{opts: opts, log: opts.Logger.With("component", "proxy", "table", opts.Table), tbl: tbl,
		changed: make(chan struct{}, 1)}
	si, ei := opts.Services.Core().V1().Services(), opts.Services.Discovery().V1().EndpointSlices()
	p.svcs, p.eps, p.pods = si.Lister(), ei.Lister(), opts.NodePods.GetIndexer()
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { p.kick() }, UpdateFunc: func(o, n any) { p.kick() }, DeleteFunc: func(any) { p.kick() },
	}
	for _, inf := range []cache.SharedIndexInformer{si.Informer(), ei.Informer()} {
		if _, err := inf.AddEventHandler(h); err != nil {
			return nil, err
		}
		p.synced = append(p.synced, inf.HasSynced)
	}
	// Pods matter only for hostPorts: ignore the status churn of pods that publish none.
	if _, err := opts.NodePods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { p.podChanged(nil, o) },
		UpdateFunc: func(o, n any) { p.podChanged(o, n) },
		DeleteFunc: func(o any) { p.podChanged(nil, o) },
	}); err != nil {
		return nil, err
	}
	p.synced = append(p.synced, opts.NodePods.HasSynced)
	return p, nil
}

func hasHostPort(o any) bool {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*v1.Pod)
	if !ok {
		return false
	}
	for _, c := range pod.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.HostPort != 0 {
				return true
			}
		}
	}
	return false
}

func (p *Proxy) podChanged(old, cur any) {
	if hasHostPort(cur) || (old != nil && hasHostPort(old)) {
		p.kick()
	}
}

func (p *Proxy) kick() {
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// Run programs the table once the informers have synced and after every change, until ctx
// ends; then it deletes the table.
func (p *Proxy) Run(ctx context.Context) {
	defer func() {
		if err := removeTable(p.tbl.conn, p.opts.Table); err != nil {
			p.log.Warn("remove table", "err", err)
		}
	}()
	if !cache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	p.log.Info("service proxy running", "bridge", p.opts.Bridge, "serviceCIDR", p.opts.ServiceCIDR, "nodeIPs", p.opts.NodeIPs)
	syncloop.Run(ctx, p.changed, p.opts.MinSyncInterval, p.Sync, func(err error) { p.log.Error("program service rules", "err", err) })
}

// Sync rewrites the table from the informers' current state.
func (p *Proxy) Sync() error {
	start := time.Now()
	svcs, err := p.svcs.List(labels.Everything())
	if err != nil {
		return err
	}
	eps, err := p.eps.List(labels.Everything())
	if err != nil {
		return err
	}
	var pods []*v1.Pod
	for _, o := range p.pods.List() {
		if pod, ok := o.(*v1.Pod); ok && pod.Spec.NodeName == p.opts.NodeName {
			pods = append(pods, pod)
		}
	}
	rs := Plan(svcs, eps, pods)
	if err := p.tbl.apply(rs); err != nil {
		return err
	}
	p.mu.Lock()
	p.last = time.Now()
	p.applied++
	p.mu.Unlock()
	p.log.Debug("service rules programmed", "services", len(rs.Services), "hostPorts", len(rs.HostPorts), "took", time.Since(start))
	return nil
}

// Applied is how many times the table was rewritten.
func (p *Proxy) Applied() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// Table is the nftables table's name.
func (p *Proxy) Table() string { return p.opts.Table }

// bridgeNetfilter reports whether bridged IPv4 passes the IP hooks (and so conntrack).
func bridgeNetfilter() bool {
	b, err := os.ReadFile("/proc/sys/net/bridge/bridge-nf-call-iptables")
	return err == nil && strings.TrimSpace(string(b)) == "1"
}

// RemoveTable deletes a table left by a proxy that did not stop cleanly (a crashed
// kubelet, a failed test). Absent, it does nothing.
func RemoveTable(name string) error {
	conn, err := nftables.New()
	if err != nil {
		return fmt.Errorf("proxy: netlink: %w", err)
	}
	return removeTable(conn, name)
}
