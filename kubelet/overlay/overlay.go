package overlay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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
	Backend  string       // BackendVXLAN, BackendHostGW or BackendNone
	// VXLANDevice names the vxlan backend's device (default DefaultVXLANDevice); nodes
	// sharing a network namespace (two clusters on one machine) need their own.
	VXLANDevice string
	// VXLANID is the vxlan backend's VNI, the same on every node of the cluster (default
	// DefaultVXLANID).
	VXLANID int
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
	var (
		apply    func(nodes []*v1.Node) (string, []Skipped, error) // one sync; what it keeps, for the log
		cleanup  func() error
		announce map[string]string // annotations this node's Node must carry
	)
	switch o.Backend {
	case BackendHostGW:
		gw := &hostGW{link: link}
		apply = func(nodes []*v1.Node) (string, []Skipped, error) {
			routes, skipped := PlanHostGW(o.NodeName, o.PodCIDR, onLink, nodes)
			return fmt.Sprint(routes), skipped, gw.sync(routes)
		}
		cleanup = gw.cleanup
	case BackendVXLAN:
		name := o.VXLANDevice
		if name == "" {
			name = DefaultVXLANDevice
		}
		dev, err := ensureVXLAN(name, o.VXLANID, link, ip, o.PodCIDR)
		if err != nil {
			return fmt.Errorf("network backend %s: %w", o.Backend, err)
		}
		announce = map[string]string{AnnotationVTEPMAC: dev.MAC().String(), AnnotationPublicIP: ip.String()}
		apply = func(nodes []*v1.Node) (string, []Skipped, error) {
			peers, skipped := PlanVXLAN(o.NodeName, o.PodCIDR, nodes)
			return fmt.Sprint(peers), skipped, dev.sync(peers)
		}
		cleanup = dev.remove
	}

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
	nodesAPI := o.Client.CoreV1().Nodes()
	told := map[string]string{} // node -> reason last logged
	var last string
	retry := time.NewTimer(0)
	<-retry.C
	for {
		nodes, _ := lister.List(labels.Everything())
		failed := false
		if self, err := lister.Get(o.NodeName); err == nil && needsAnnotations(self, announce) {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": announce}})
			if _, err := nodesAPI.Patch(ctx, o.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
				log.Warn("announce this node's VXLAN endpoint; retrying", "err", err)
				failed = true
			}
		}
		kept, skipped, err := apply(nodes)
		for _, s := range skipped {
			if told[s.Node] != s.Reason {
				told[s.Node] = s.Reason
				log.Debug("no route to a node's pods", "node", s.Node, "reason", s.Reason)
			}
		}
		if err != nil {
			log.Warn("sync routes to other nodes' pods; retrying", "err", err)
			failed = true
		} else if kept != last {
			last = kept
			log.Info("routes to other nodes' pods", "routes", kept)
		}
		if failed {
			retry.Reset(retryEvery)
		}
		select {
		case <-ctx.Done():
			if o.CleanupOnExit {
				if err := cleanup(); err != nil {
					log.Warn("remove routes on exit", "err", err)
				}
			}
			return nil
		case <-kick:
		case <-retry.C:
		}
	}
}

// needsAnnotations reports whether n lacks any of want or carries another value.
func needsAnnotations(n *v1.Node, want map[string]string) bool {
	for k, v := range want {
		if n.Annotations[k] != v {
			return true
		}
	}
	return false
}
