package overlay

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Options configure Run.
type Options struct {
	Client   kubernetes.Interface
	NodeName string
	NodeIP   string       // this node's InternalIP; its interface carries the routes
	PodCIDR  netip.Prefix // this node's pod subnet
	Backend  string       // BackendHostGW or BackendNone
	// CleanupOnExit removes the backend's routes when Run returns.
	CleanupOnExit bool
	Logger        *slog.Logger
}

// retryEvery is how soon a failed sync is tried again.
const retryEvery = 2 * time.Second

// Run keeps this host's routes to the other nodes' pod subnets in step with the Nodes
// until ctx ends. Every Node event triggers a sync of the whole plan (coalesced: a burst
// of events is one sync), so a node added, changed or removed is reflected as soon as
// its event arrives. It returns an error only when it cannot start.
func Run(ctx context.Context, o Options) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("backend", o.Backend)
	if err := CheckBackend(o.Backend); err != nil {
		return err
	}
	if o.Backend == BackendNone {
		return nil
	}
	ip, err := netip.ParseAddr(o.NodeIP)
	if err != nil || !ip.Is4() {
		return fmt.Errorf("network backend %s: node IP %q is not IPv4", o.Backend, o.NodeIP)
	}
	if ip.IsLoopback() {
		log.Info("pod network backend idle: the node IP is loopback, so no other host can route to this node's pods", "nodeIP", o.NodeIP)
		return nil
	}
	link, onLink, err := NodeLink(ip)
	if err != nil {
		return fmt.Errorf("network backend %s: %w", o.Backend, err)
	}
	gw := &hostGW{link: link}

	f := informers.NewSharedInformerFactory(o.Client, 0)
	inf := f.Core().V1().Nodes()
	lister := inf.Lister()
	kick := make(chan struct{}, 1)
	signal := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: signal, UpdateFunc: func(_, n any) { signal(n) }, DeleteFunc: signal,
	})
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return nil
	}
	log.Info("pod network backend running", "link", link.Attrs().Name, "subnet", onLink.String())
	told := map[string]string{} // node -> reason last logged
	var last string
	retry := time.NewTimer(0)
	<-retry.C
	for {
		nodes, _ := lister.List(labels.Everything())
		routes, skipped := PlanHostGW(o.NodeName, o.PodCIDR, onLink, nodes)
		for _, s := range skipped {
			if told[s.Node] != s.Reason {
				told[s.Node] = s.Reason
				log.Debug("no route to a node's pods", "node", s.Node, "reason", s.Reason)
			}
		}
		if err := gw.sync(routes); err != nil {
			log.Warn("sync routes to other nodes' pods; retrying", "err", err)
			retry.Reset(retryEvery)
		} else if s := fmt.Sprint(routes); s != last {
			last = s
			log.Info("routes to other nodes' pods", "routes", s)
		}
		select {
		case <-ctx.Done():
			if o.CleanupOnExit {
				if err := gw.cleanup(); err != nil {
					log.Warn("remove routes on exit", "err", err)
				}
			}
			return nil
		case <-kick:
		case <-retry.C:
		}
	}
}
